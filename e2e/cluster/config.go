package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The cluster's fixed names and ranges. They are the host's (one cluster
// per machine), chosen away from the usual Docker and kind ranges.
const (
	// NodeName is the one node's name.
	NodeName = "portcullis-node"
	// Bridge is the Linux bridge the Pods' veths are attached to; it holds
	// GatewayIP, the Pods' default route, the API server's address and the
	// node's InternalIP.
	Bridge = "pcl0"
	// PodCIDR is the node's Pod range (the cluster's too).
	PodCIDR = "10.213.0.0/24"
	// GatewayIP is the bridge's address in PodCIDR.
	GatewayIP = "10.213.0.1"
	// ServiceCIDR is the Services' ClusterIP range; the kubernetes
	// Service gets its first address.
	ServiceCIDR = "10.214.0.0/24"
	// APIServerPort is the API server's port on GatewayIP.
	APIServerPort = 6443
	// KubeletPort is the node agent's kubelet API (logs) on GatewayIP.
	KubeletPort = 10250
	// NetnsPrefix names the Pods' network namespaces and VethPrefix their
	// host-side veths, so Down finds every one.
	NetnsPrefix = "pcl-"
	VethPrefix  = "pclv"
	// RuleComment marks the iptables rules Up adds (kube-proxy's own are
	// removed by kube-proxy --cleanup).
	RuleComment = "portcullis-cluster"
	// PolicyChain is the filter chain every packet forwarded to a Pod
	// goes through (from FORWARD): the node agent fills it, and the
	// chains it jumps to (named PolicyChainPrefix...), with the
	// NetworkPolicies' Ingress rules. Down deletes every chain of the
	// prefix.
	PolicyChain       = "PCL-INGRESS"
	PolicyChainPrefix = "PCL-"
)

// PolicyChains is the NetworkPolicies' chains (PolicyChainPrefix) that
// `iptables -t filter -S` printed.
func PolicyChains(rules string) []string {
	var chains []string
	for _, line := range strings.Split(rules, "\n") {
		if name, ok := strings.CutPrefix(line, "-N "); ok && strings.HasPrefix(name, PolicyChainPrefix) {
			chains = append(chains, name)
		}
	}
	return chains
}

// LockFile is held by the node agent for the cluster's life: one cluster
// per machine, whatever its state dir.
const LockFile = "/run/portcullis-cluster.lock"

// DefaultStateDir is where a cluster keeps its data, certificates, logs
// and kubeconfig; machine-wide like the cluster.
const DefaultStateDir = "/tmp/portcullis-cluster"

// Config is what Up needs to know.
type Config struct {
	// StateDir holds everything the cluster writes (DefaultStateDir).
	StateDir string
	// ToolsBin holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler, kube-proxy and envoy (.tools/bin).
	ToolsBin string
	// Self is the executable that runs the node agent (its "node"
	// subcommand) and the containers' init ("container-init").
	Self string
	// Images maps image references to what the node agent runs for them.
	Images []Image
}

// Image tells the node agent what to run for the containers of an image:
// the files of an image tarball (make image), or host executables.
type Image struct {
	// Repository is the image reference without its tag (any tag matches).
	Repository string `json:"repository"`
	// Tarball is an image tarball (docker save format) to run from.
	Tarball string `json:"tarball,omitempty"`
	// Executables maps the commands a container may name to host
	// executables, for images run from the host (Envoy, echo-basic).
	Executables map[string]string `json:"executables,omitempty"`
	// Entrypoint is the command of a container that names none, for
	// images given by Executables.
	Entrypoint []string `json:"entrypoint,omitempty"`
	// Args come before the container's arguments (for host images whose
	// executable needs a subcommand).
	Args []string `json:"args,omitempty"`
	// Note says why an image is not the real thing (e.g. coredns).
	Note string `json:"note,omitempty"`
}

// Paths are the files of a cluster under its state dir.
type Paths struct{ Dir string }

// Kubeconfig is the administrator's kubeconfig, the one Up returns.
func (p Paths) Kubeconfig() string { return filepath.Join(p.Dir, "kubeconfig") }

// PKI is the folder of the CA, the components' certificates and their
// kubeconfigs.
func (p Paths) PKI() string { return filepath.Join(p.Dir, "pki") }

// Etcd is etcd's data dir.
func (p Paths) Etcd() string { return filepath.Join(p.Dir, "etcd") }

// Logs is the folder of the components' logs (<component>.log).
func (p Paths) Logs() string { return filepath.Join(p.Dir, "logs") }

// Pids is the folder of the components' pid files, in start order.
func (p Paths) Pids() string { return filepath.Join(p.Dir, "pids") }

// Node is the node agent's data dir (Pods' volumes and logs, unpacked
// images).
func (p Paths) Node() string { return filepath.Join(p.Dir, "node") }

// NodeConfig is the node agent's configuration file (NodeConfig).
func (p Paths) NodeConfig() string { return filepath.Join(p.Dir, "node.json") }

// State records the host changes Up made, for Down (and the next Up) to
// undo.
func (p Paths) State() string { return filepath.Join(p.Dir, "state.json") }

// NodeConfig is the node agent's configuration, written by Up.
type NodeConfig struct {
	NodeName    string  `json:"nodeName"`
	Kubeconfig  string  `json:"kubeconfig"`
	PodCIDR     string  `json:"podCIDR"`
	GatewayIP   string  `json:"gatewayIP"`
	Bridge      string  `json:"bridge"`
	ServiceCIDR string  `json:"serviceCIDR"`
	DataDir     string  `json:"dataDir"`
	Self        string  `json:"self"`
	Images      []Image `json:"images"`
	// The kubelet API: serving certificate and the CA of the API server's
	// client certificate.
	KubeletAddress  string `json:"kubeletAddress"`
	KubeletPort     int    `json:"kubeletPort"`
	KubeletCert     string `json:"kubeletCert"`
	KubeletKey      string `json:"kubeletKey"`
	KubeletClientCA string `json:"kubeletClientCA"`
}

// ReadNodeConfig reads the node agent's configuration.
func ReadNodeConfig(path string) (*NodeConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c NodeConfig
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &c, nil
}

// state is what Up changed on the host that Down restores.
type state struct {
	// Sysctls maps the sysctls Up set to their values before.
	Sysctls map[string]string `json:"sysctls"`
}

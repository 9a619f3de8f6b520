// Package xdsserver serves Envoy resources over ADS with go-control-plane,
// and records what Envoy says back: an ADS NACK (a request carrying
// error_detail) means Envoy rejected configuration, which must be visible.
package xdsserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/translator"
)

// nodeGroup puts every Envoy in one group: they all get the same
// configuration.
type nodeGroup struct{}

func (nodeGroup) ID(*corev3.Node) string { return "portcullis" }

// Rejection is a configuration Envoy refused.
type Rejection struct {
	TypeURL string `json:"typeUrl"`
	// Version is the rejected version; Envoy keeps Accepted.
	Version  string `json:"version"`
	Accepted string `json:"accepted,omitempty"`
	Node     string `json:"node"`
	Message  string `json:"message"`
	// Resources are the names of the resources Envoy rejected: those its
	// message names, else those that changed since the accepted version.
	Resources []string  `json:"resources,omitempty"`
	Time      time.Time `json:"time"`
}

// keptVersions is how many published versions keep their per-resource
// hashes, to tell which resources a NACK is about.
const keptVersions = 16

// Server holds the snapshot cache and the ADS server.
type Server struct {
	log   *slog.Logger
	cache cachev3.SnapshotCache

	mu         sync.Mutex
	version    int
	lastHash   string
	rejections map[string]Rejection // by type URL
	acked      map[string]string    // type URL -> last acknowledged version
	streams    map[int64]string     // stream -> node ID
	// sent maps a response nonce to its version: a NACK carries the nonce
	// of the rejected response and the version Envoy kept.
	sent map[string]string
	// hashes holds, for recent versions, type URL -> name -> hash.
	hashes map[string]map[string]map[string]string
	order  []string
	// OnRejection, when set, is called for every NACK received (also
	// repeated ones), outside the lock.
	OnRejection func(Rejection)
	// OnChange, when set, is called when the set of rejected types changes
	// (a new rejection, or Envoy accepting a type again), outside the lock.
	OnChange func()
}

// New returns a server with an empty configuration.
func New(log *slog.Logger) *Server {
	return &Server{
		log:        log,
		cache:      cachev3.NewSnapshotCache(true, nodeGroup{}, nil),
		rejections: map[string]Rejection{},
		acked:      map[string]string{},
		streams:    map[int64]string{},
		sent:       map[string]string{},
		hashes:     map[string]map[string]map[string]string{},
	}
}

// Update publishes a new set of resources; unchanged resources publish
// nothing. It returns the version in force.
func (s *Server) Update(ctx context.Context, r *translator.Resources) (string, error) {
	hash, perResource, err := hashResources(r)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if hash == s.lastHash {
		return fmt.Sprint(s.version), nil
	}
	version := fmt.Sprint(s.version + 1)
	snap, err := cachev3.NewSnapshot(version, map[resourcev3.Type][]types.Resource{
		resourcev3.ListenerType: asResources(r.Listeners),
		resourcev3.RouteType:    asResources(r.Routes),
		resourcev3.ClusterType:  asResources(r.Clusters),
		resourcev3.EndpointType: asResources(r.Endpoints),
		resourcev3.SecretType:   asResources(r.Secrets),
	})
	if err != nil {
		return "", err
	}
	if err := snap.Consistent(); err != nil {
		// A translator bug, not a user error: refuse to publish it.
		return "", fmt.Errorf("inconsistent snapshot: %w", err)
	}
	if err := s.cache.SetSnapshot(ctx, nodeGroup{}.ID(nil), snap); err != nil {
		return "", err
	}
	s.version++
	s.lastHash = hash
	s.hashes[version] = perResource
	s.order = append(s.order, version)
	if len(s.order) > keptVersions {
		delete(s.hashes, s.order[0])
		s.order = s.order[1:]
	}
	return version, nil
}

func asResources(ms []proto.Message) []types.Resource {
	out := make([]types.Resource, len(ms))
	for i, m := range ms {
		out[i] = m.(types.Resource)
	}
	return out
}

// hashResources hashes the whole set (to skip publishing an unchanged
// one) and each resource (to tell which ones a NACK is about).
func hashResources(r *translator.Resources) (string, map[string]map[string]string, error) {
	h := sha256.New()
	per := map[string]map[string]string{}
	for _, l := range []struct {
		typeURL string
		list    []proto.Message
	}{
		{resourcev3.ListenerType, r.Listeners}, {resourcev3.RouteType, r.Routes}, {resourcev3.ClusterType, r.Clusters},
		{resourcev3.EndpointType, r.Endpoints}, {resourcev3.SecretType, r.Secrets},
	} {
		names := make(map[string]string, len(l.list))
		for _, m := range l.list {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
			if err != nil {
				return "", nil, err
			}
			sum := sha256.Sum256(b)
			h.Write(sum[:])
			names[translator.ResourceName(m)] = string(sum[:8])
		}
		per[l.typeURL] = names
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), per, nil
}

// rejectedResources names the resources of a rejected version that Envoy
// refused: those the message names, else those that differ from the
// version Envoy kept (all of them when it kept none). Called with mu held.
func (s *Server) rejectedResources(typeURL, rejected, accepted, message string) []string {
	cur := s.hashes[rejected][typeURL]
	var named, changed []string
	base, haveBase := s.hashes[accepted][typeURL]
	for name, h := range cur {
		if name != "" && strings.Contains(message, name) {
			named = append(named, name)
		}
		if !haveBase || base[name] != h {
			changed = append(changed, name)
		}
	}
	out := named
	if len(out) == 0 {
		out = changed
	}
	sort.Strings(out)
	return out
}

// Rejections lists the configurations Envoy currently refuses, by type.
func (s *Server) Rejections() []Rejection {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Rejection, 0, len(s.rejections))
	for _, r := range s.rejections {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].TypeURL < out[j].TypeURL })
	return out
}

// Acked returns the last version Envoy acknowledged for each type.
func (s *Server) Acked() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]string{}
	for k, v := range s.acked {
		out[k] = v
	}
	return out
}

// Connected returns the number of ADS streams open.
func (s *Server) Connected() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.streams)
}

func (s *Server) onRequest(stream int64, req *discoveryv3.DiscoveryRequest) error {
	s.mu.Lock()
	node := s.streams[stream]
	if req.GetNode().GetId() != "" {
		node = req.GetNode().GetId()
		s.streams[stream] = node
	}
	sentVersion, known := s.sent[req.ResponseNonce]
	if req.ErrorDetail != nil {
		rejected := sentVersion
		if !known {
			rejected = "unknown"
		}
		rej := Rejection{TypeURL: req.TypeUrl, Version: rejected, Accepted: req.VersionInfo, Node: node, Message: req.ErrorDetail.GetMessage(), Time: time.Now()}
		rej.Resources = s.rejectedResources(req.TypeUrl, rejected, req.VersionInfo, rej.Message)
		prev, had := s.rejections[req.TypeUrl]
		s.rejections[req.TypeUrl] = rej
		changed := !had || prev.Message != rej.Message || !slices.Equal(prev.Resources, rej.Resources)
		onRej, onChange := s.OnRejection, s.OnChange
		s.mu.Unlock()
		if changed {
			s.log.Error("Envoy rejected configuration", "type", req.TypeUrl, "version", rejected, "kept", req.VersionInfo,
				"resources", rej.Resources, "node", node, "error", rej.Message)
		}
		if onRej != nil {
			onRej(rej)
		}
		if changed && onChange != nil {
			onChange()
		}
		return nil
	}
	// An ACK names the version of the response it answers; a request that
	// only changes subscriptions after a NACK still carries the old one.
	cleared := false
	if known && req.VersionInfo != "" && req.VersionInfo == sentVersion {
		s.acked[req.TypeUrl] = req.VersionInfo
		if _, ok := s.rejections[req.TypeUrl]; ok {
			delete(s.rejections, req.TypeUrl)
			cleared = true
			s.log.Info("Envoy accepted configuration again", "type", req.TypeUrl, "version", req.VersionInfo)
		}
	}
	onChange := s.OnChange
	s.mu.Unlock()
	if cleared && onChange != nil {
		onChange()
	}
	return nil
}

func (s *Server) onResponse(_ context.Context, _ int64, _ *discoveryv3.DiscoveryRequest, resp *discoveryv3.DiscoveryResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sent) > 4096 {
		// Old nonces are never answered again; forget them in bulk.
		clear(s.sent)
	}
	s.sent[resp.Nonce] = resp.VersionInfo
}

// Serve runs the ADS server on addr until ctx ends.
func (s *Server) Serve(ctx context.Context, lis net.Listener) error {
	cb := serverv3.CallbackFuncs{
		StreamOpenFunc: func(_ context.Context, id int64, _ string) error {
			s.mu.Lock()
			s.streams[id] = ""
			s.mu.Unlock()
			return nil
		},
		StreamClosedFunc: func(id int64, _ *corev3.Node) {
			s.mu.Lock()
			delete(s.streams, id)
			s.mu.Unlock()
		},
		StreamRequestFunc:  s.onRequest,
		StreamResponseFunc: s.onResponse,
	}
	xds := serverv3.NewServer(ctx, s.cache, cb)
	g := grpc.NewServer(
		grpc.MaxConcurrentStreams(1<<20),
		grpc.KeepaliveParams(keepalive.ServerParameters{Time: 30 * time.Second, Timeout: 5 * time.Second}),
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 15 * time.Second, PermitWithoutStream: true}),
	)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(g, xds)
	go func() {
		<-ctx.Done()
		g.Stop()
	}()
	return g.Serve(lis)
}

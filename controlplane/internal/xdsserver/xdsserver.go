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
	"sort"
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
	TypeURL string    `json:"typeUrl"`
	Version string    `json:"version"`
	Node    string    `json:"node"`
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
}

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
	// OnRejection, when set, is called for every new NACK.
	OnRejection func(Rejection)
}

// New returns a server with an empty configuration.
func New(log *slog.Logger) *Server {
	return &Server{
		log:        log,
		cache:      cachev3.NewSnapshotCache(true, nodeGroup{}, nil),
		rejections: map[string]Rejection{},
		acked:      map[string]string{},
		streams:    map[int64]string{},
	}
}

// Update publishes a new set of resources; unchanged resources publish
// nothing. It returns the version in force.
func (s *Server) Update(ctx context.Context, r *translator.Resources) (string, error) {
	hash, err := hashResources(r)
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
	return version, nil
}

func asResources(ms []proto.Message) []types.Resource {
	out := make([]types.Resource, len(ms))
	for i, m := range ms {
		out[i] = m.(types.Resource)
	}
	return out
}

func hashResources(r *translator.Resources) (string, error) {
	h := sha256.New()
	for _, list := range [][]proto.Message{r.Listeners, r.Routes, r.Clusters, r.Endpoints, r.Secrets} {
		for _, m := range list {
			b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
			if err != nil {
				return "", err
			}
			h.Write(b)
		}
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)), nil
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
	if req.ErrorDetail != nil {
		rej := Rejection{TypeURL: req.TypeUrl, Version: req.VersionInfo, Node: node, Message: req.ErrorDetail.GetMessage(), Time: time.Now()}
		_, known := s.rejections[req.TypeUrl]
		s.rejections[req.TypeUrl] = rej
		cb := s.OnRejection
		s.mu.Unlock()
		if !known {
			s.log.Error("Envoy rejected configuration", "type", req.TypeUrl, "node", node, "error", rej.Message)
			if cb != nil {
				cb(rej)
			}
		}
		return nil
	}
	if req.ResponseNonce != "" && req.VersionInfo != "" {
		s.acked[req.TypeUrl] = req.VersionInfo
		if _, ok := s.rejections[req.TypeUrl]; ok {
			delete(s.rejections, req.TypeUrl)
			s.log.Info("Envoy accepted configuration again", "type", req.TypeUrl, "version", req.VersionInfo)
		}
	}
	s.mu.Unlock()
	return nil
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
		StreamRequestFunc: s.onRequest,
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

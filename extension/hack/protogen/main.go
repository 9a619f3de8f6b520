// Command protogen generates the Go code of the extension module's .proto
// files (proto/) into api/, without protoc and without the Envoy .proto
// sources:
//
//   - protocompile (a pure-Go .proto compiler) compiles the files under
//     proto/. Their imports of Envoy, xDS, UDPA, validate and well-known
//     types resolve to the file descriptors the go-control-plane, cncf/xds,
//     protoc-gen-validate and protobuf Go packages embed and register in
//     protoregistry.GlobalFiles, so they are exactly the versions go.mod
//     pins.
//   - The compiled files and all their transitive dependencies, in
//     dependency order, make a plugin CodeGeneratorRequest, which
//     protoc-gen-go and protoc-gen-go-grpc (installed in .tools/bin by
//     `hack/install-tools.sh protoc-gen`) answer as they would under protoc.
//
// Usage, from the extension module's directory (hack/generate.sh runs it):
//
//	go run ./hack/protogen [-proto proto] [-out .] [-plugins ../.tools/bin]
//
// The generated files are committed; main_test.go fails when they are stale.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/bufbuild/protocompile"
	"github.com/bufbuild/protocompile/linker"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/pluginpb"

	// The packages whose embedded descriptors our .proto files import; each
	// registers its files and, through its own imports, their dependencies.
	_ "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// goModule is the extension module's path: the plugins write files
// relative to it (their "module" option).
const goModule = "github.com/portcullis/portcullis/extension"

// plugins are the protoc plugins run, in order.
var plugins = []string{"protoc-gen-go", "protoc-gen-go-grpc"}

func main() {
	protoDir := flag.String("proto", "proto", "directory of the .proto files (their import root)")
	out := flag.String("out", ".", "directory of the extension module: generated files go to their Go package's directory under it")
	pluginDir := flag.String("plugins", filepath.Join("..", ".tools", "bin"), "directory holding protoc-gen-go and protoc-gen-go-grpc")
	flag.Parse()

	files, err := Generate(context.Background(), *protoDir, *pluginDir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
	if err := write(*out, files); err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
}

// Generate compiles every .proto file under protoDir and returns the files
// the plugins in pluginDir generate for them, by path relative to the
// module's directory.
func Generate(ctx context.Context, protoDir, pluginDir string) (map[string][]byte, error) {
	for _, p := range plugins {
		if _, err := os.Stat(filepath.Join(pluginDir, p)); err != nil {
			return nil, fmt.Errorf("%s not found in %s: run `make tools` (or hack/install-tools.sh protoc-gen)", p, pluginDir)
		}
	}
	names, err := protoFiles(protoDir)
	if err != nil {
		return nil, err
	}
	req, err := request(ctx, protoDir, names)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, p := range plugins {
		if err := runPlugin(ctx, filepath.Join(pluginDir, p), req, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// protoFiles lists the .proto files under dir, relative to it, sorted.
func protoFiles(dir string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".proto") {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		names = append(names, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no .proto files under %s", dir)
	}
	sort.Strings(names)
	return names, nil
}

// request compiles names (relative to protoDir) and builds the plugin
// request that generates them.
func request(ctx context.Context, protoDir string, names []string) (*pluginpb.CodeGeneratorRequest, error) {
	c := protocompile.Compiler{
		Resolver: protocompile.CompositeResolver{
			&protocompile.SourceResolver{ImportPaths: []string{protoDir}},
			protocompile.ResolverFunc(fromRegistry),
		},
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	compiled, err := c.Compile(ctx, names...)
	if err != nil {
		return nil, err
	}
	local := map[string]*descriptorpb.FileDescriptorProto{}
	for _, f := range compiled {
		r, ok := f.(linker.Result)
		if !ok {
			return nil, fmt.Errorf("%s: compiled without its descriptor proto", f.Path())
		}
		local[f.Path()] = r.FileDescriptorProto()
	}

	// All the files, each after its dependencies, as protoc sends them.
	var ordered []*descriptorpb.FileDescriptorProto
	seen := map[string]bool{}
	var visit func(path string) error
	visit = func(path string) error {
		if seen[path] {
			return nil
		}
		seen[path] = true
		fdp, ok := local[path]
		if !ok {
			fd, err := protoregistry.GlobalFiles.FindFileByPath(path)
			if err != nil {
				return fmt.Errorf("import %s: %w", path, err)
			}
			fdp = protodesc.ToFileDescriptorProto(fd)
		}
		for _, dep := range fdp.GetDependency() {
			if err := visit(dep); err != nil {
				return err
			}
		}
		ordered = append(ordered, fdp)
		return nil
	}
	for _, n := range names {
		if err := visit(n); err != nil {
			return nil, err
		}
	}

	var sources []*descriptorpb.FileDescriptorProto
	for _, n := range names {
		sources = append(sources, local[n])
	}
	return &pluginpb.CodeGeneratorRequest{
		FileToGenerate:        names,
		Parameter:             proto.String("module=" + goModule),
		ProtoFile:             ordered,
		SourceFileDescriptors: sources,
	}, nil
}

// fromRegistry resolves an import to a file the linked Go packages
// registered.
func fromRegistry(path string) (protocompile.SearchResult, error) {
	fd, err := protoregistry.GlobalFiles.FindFileByPath(path)
	if errors.Is(err, protoregistry.NotFound) {
		return protocompile.SearchResult{}, fmt.Errorf("%s: not a local file, and no linked Go package registers it (blank-import its package in hack/protogen): %w", path, fs.ErrNotExist)
	} else if err != nil {
		return protocompile.SearchResult{}, err
	}
	return protocompile.SearchResult{Desc: fd}, nil
}

// runPlugin runs one protoc plugin on req and adds its files to out.
func runPlugin(ctx context.Context, plugin string, req *pluginpb.CodeGeneratorRequest, out map[string][]byte) error {
	in, err := proto.Marshal(req)
	if err != nil {
		return err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, plugin)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %v\n%s", filepath.Base(plugin), err, stderr.Bytes())
	}
	var resp pluginpb.CodeGeneratorResponse
	if err := proto.Unmarshal(stdout.Bytes(), &resp); err != nil {
		return fmt.Errorf("%s: decoding its response: %w", filepath.Base(plugin), err)
	}
	if resp.Error != nil {
		return fmt.Errorf("%s: %s", filepath.Base(plugin), resp.GetError())
	}
	for _, f := range resp.GetFile() {
		if f.GetInsertionPoint() != "" {
			return fmt.Errorf("%s: insertion points are not supported (%s)", filepath.Base(plugin), f.GetName())
		}
		name := f.GetName()
		if _, dup := out[name]; dup {
			return fmt.Errorf("%s: %s generated twice", filepath.Base(plugin), name)
		}
		out[name] = []byte(f.GetContent())
	}
	return nil
}

// write replaces the generated Go files of the directories files go to.
func write(dir string, files map[string][]byte) error {
	dirs := map[string]bool{}
	for name := range files {
		dirs[filepath.Dir(filepath.Join(dir, filepath.FromSlash(name)))] = true
	}
	// A file no longer generated (a removed .proto) must not stay behind.
	for d := range dirs {
		old, _ := filepath.Glob(filepath.Join(d, "*.pb.go"))
		for _, p := range old {
			if err := os.Remove(p); err != nil {
				return err
			}
		}
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		// Owner-only modes for new files and directories (git records
		// none but the executable bit).
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			return err
		}
		if err := os.WriteFile(p, content, 0o600); err != nil {
			return err
		}
	}
	return nil
}

package nodeagent

import (
	"bytes"
	"context"
	"io"
	"os"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
)

// containerLogs serves kubectl logs: the container's output as written
// (no timestamps: Timestamps, SinceSeconds and SinceTime are not
// honoured), the last Tail lines, at most LimitBytes, the previous run's
// with Previous, and with Follow new output until the container exits or
// the client goes.
func (a *Agent) containerLogs(ctx context.Context, ns, podName, name string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	p := a.get(ns, podName)
	if p == nil {
		return nil, errdefs.NotFoundf("pod %s/%s", ns, podName)
	}
	var c *container
	for _, cc := range append(append([]*container(nil), p.inits...), p.containers...) {
		if cc.spec.Name == name {
			c = cc
		}
	}
	if c == nil {
		return nil, errdefs.NotFoundf("container %s in pod %s/%s", name, ns, podName)
	}
	path := c.logPath(opts.Previous)
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		if opts.Previous {
			return nil, errdefs.NotFoundf("previous terminated container %s in pod %s/%s not found", name, ns, podName)
		}
		b, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	offset := int64(len(b))
	if opts.Tail > 0 {
		b = lastLines(b, opts.Tail)
	}
	if opts.LimitBytes > 0 && len(b) > opts.LimitBytes {
		b = b[:opts.LimitBytes]
	}
	if !opts.Follow || opts.Previous {
		return io.NopCloser(bytes.NewReader(b)), nil
	}
	pr, pw := io.Pipe()
	go func() {
		if _, err := pw.Write(b); err != nil {
			return
		}
		for {
			select {
			case <-ctx.Done():
				pw.Close()
				return
			case <-time.After(250 * time.Millisecond):
			}
			f, err := os.Open(path)
			if err != nil {
				pw.Close()
				return
			}
			n, _ := f.Seek(0, io.SeekEnd)
			if n > offset {
				_, _ = f.Seek(offset, io.SeekStart)
				w, err := io.CopyN(pw, f, n-offset)
				offset += w
				if err != nil {
					f.Close()
					pw.CloseWithError(err)
					return
				}
			}
			f.Close()
			p.mu.Lock()
			running := c.cmd != nil
			p.mu.Unlock()
			if !running {
				pw.Close()
				return
			}
		}
	}()
	return pr, nil
}

// lastLines is the last n lines of b.
func lastLines(b []byte, n int) []byte {
	end := len(b)
	if end > 0 && b[end-1] == '\n' {
		end--
	}
	i := end
	for ; i > 0 && n > 0; i-- {
		if b[i-1] == '\n' {
			n--
			if n == 0 {
				break
			}
		}
	}
	return b[i:]
}

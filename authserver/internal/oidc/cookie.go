package oidc

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// maxChunk is the longest cookie value written in one cookie; browsers
// keep about 4096 bytes per cookie, name and attributes included.
const maxChunk = 3800

// maxChunks bounds how many chunks a session may take (and how many are
// read back), so a client cannot make us concatenate without end.
const maxChunks = 8

// sealer encrypts cookie values with AES-256-GCM. The first key seals;
// every key opens (key rotation). The cookie name is the associated data,
// so a value cannot be moved from one cookie to another (state to session).
type sealer struct{ aeads []cipher.AEAD }

func newSealer(keys [][]byte) (*sealer, error) {
	if len(keys) == 0 {
		return nil, errors.New("no cookie key")
	}
	s := &sealer{}
	for _, k := range keys {
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		s.aeads = append(s.aeads, aead)
	}
	return s, nil
}

func (s *sealer) seal(name string, plaintext []byte) string {
	a := s.aeads[0]
	nonce := make([]byte, a.NonceSize(), a.NonceSize()+len(plaintext)+a.Overhead())
	rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(a.Seal(nonce, nonce, plaintext, []byte(name)))
}

var (
	errBadCookie       = errors.New("cookie does not decrypt")
	errDuplicateCookie = errors.New("session cookie sent more than once")
)

func (s *sealer) open(name, value string) ([]byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil {
		return nil, errBadCookie
	}
	for _, a := range s.aeads {
		if len(b) < a.NonceSize() {
			continue
		}
		if p, err := a.Open(nil, b[:a.NonceSize()], b[a.NonceSize():], []byte(name)); err == nil {
			return p, nil
		}
	}
	return nil, errBadCookie
}

// cookieJar writes Set-Cookie values with the configured attributes.
type cookieJar struct {
	domain, path string
}

func (j cookieJar) set(name, value string, maxAge time.Duration) string {
	c := &http.Cookie{
		Name: name, Value: value, Domain: j.domain, Path: j.path,
		MaxAge: int(maxAge / time.Second), Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode,
	}
	if c.MaxAge <= 0 {
		c.MaxAge = 1 // 0 would mean "no Max-Age" (a browser-session cookie)
	}
	return c.String()
}

func (j cookieJar) clear(name string) string {
	c := &http.Cookie{Name: name, Value: "", Domain: j.domain, Path: j.path, MaxAge: -1,
		Secure: true, HttpOnly: true, SameSite: http.SameSiteLaxMode}
	return c.String()
}

// chunkName is the name of chunk i of cookie name.
func chunkName(name string, i int) string { return name + "_" + strconv.Itoa(i) }

// readChunked returns the value of cookie name from the request's cookies:
// name itself, or else name_0, name_1, ... concatenated.
func readChunked(cookies map[string]string, name string) (string, bool) {
	if v, ok := cookies[name]; ok {
		return v, true
	}
	var b strings.Builder
	for i := 0; i < maxChunks; i++ {
		v, ok := cookies[chunkName(name, i)]
		if !ok {
			break
		}
		b.WriteString(v)
	}
	return b.String(), b.Len() > 0
}

// writeChunked returns the Set-Cookie values that store value under name,
// in one cookie or in numbered chunks, and clear whatever form of name the
// request had that is not rewritten.
func (j cookieJar) writeChunked(cookies map[string]string, name, value string, maxAge time.Duration) ([]string, error) {
	var out []string
	written := map[string]bool{}
	if len(value) <= maxChunk {
		out = append(out, j.set(name, value, maxAge))
		written[name] = true
	} else {
		n := (len(value) + maxChunk - 1) / maxChunk
		if n > maxChunks {
			return nil, errors.New("session too large for cookies")
		}
		for i := 0; i < n; i++ {
			part := value[i*maxChunk : min((i+1)*maxChunk, len(value))]
			out = append(out, j.set(chunkName(name, i), part, maxAge))
			written[chunkName(name, i)] = true
		}
	}
	return append(out, j.clearStale(cookies, name, written)...), nil
}

// clearChunked clears every form of name the request carried.
func (j cookieJar) clearChunked(cookies map[string]string, name string) []string {
	return j.clearStale(cookies, name, nil)
}

func (j cookieJar) clearStale(cookies map[string]string, name string, keep map[string]bool) []string {
	var out []string
	for _, n := range append([]string{name}, chunkNames(name)...) {
		if _, ok := cookies[n]; ok && !keep[n] {
			out = append(out, j.clear(n))
		}
	}
	return out
}

func chunkNames(name string) []string {
	names := make([]string, maxChunks)
	for i := range names {
		names[i] = chunkName(name, i)
	}
	return names
}

// parseCookies reads a Cookie header into a map, and lists in dup the
// names sent more than once. Two cookies of one name mean that another
// host (a sibling subdomain with Domain=<parent>) or path set one beside
// ours, and the order a browser sends them in proves nothing: callers must
// not read such a name at all. values keeps the first of them, so that
// the name still counts as present when cookies are cleared.
func parseCookies(header string) (values map[string]string, dup map[string]bool) {
	values, dup = map[string]string{}, map[string]bool{}
	if header == "" {
		return values, dup
	}
	for _, c := range (&http.Request{Header: http.Header{"Cookie": {header}}}).Cookies() {
		if _, seen := values[c.Name]; seen {
			dup[c.Name] = true
			continue
		}
		values[c.Name] = c.Value
	}
	return values, dup
}

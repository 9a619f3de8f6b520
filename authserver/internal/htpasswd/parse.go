package htpasswd

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxUsername bounds a stored user name; Auth-Username must stay a short,
// safe header value.
const maxUsername = 256

// parsed is what one source (a Secret or a file) holds.
type parsed struct {
	users    []user
	problems []problem // lines skipped
	insecure []user    // accepted with a legacy hash (--allow-insecure-hashes)
}

type user struct {
	name string
	cred *credential
}

// problem is a skipped line. It names the line and the reason, never the
// line's content (which holds a hash, or a password in plain text).
type problem struct {
	line   int
	reason string
	msg    string
}

// parse reads htpasswd data: one "user:encoded-password" per line; blank
// lines and lines starting with '#' are ignored; CRLF line ends are
// accepted. A bad line is reported and skipped, the rest is used. A user
// listed twice keeps its first line.
func parse(data []byte, allowInsecure bool) parsed {
	var p parsed
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, enc, ok := strings.Cut(line, ":")
		if !ok || enc == "" {
			p.problems = append(p.problems, problem{n, reasonMalformed, "not user:hash"})
			continue
		}
		if msg := invalidUsername(name); msg != "" {
			p.problems = append(p.problems, problem{n, reasonInvalidUser, msg})
			continue
		}
		if seen[name] {
			p.problems = append(p.problems, problem{n, reasonDuplicate, fmt.Sprintf("user %q listed again; the first line is used", name)})
			continue
		}
		cred, err := parseHash(enc, allowInsecure)
		if err != nil {
			he := err.(*hashError)
			p.problems = append(p.problems, problem{n, he.reason, fmt.Sprintf("user %q: %s", name, he.msg)})
			continue
		}
		seen[name] = true
		u := user{name: name, cred: cred}
		p.users = append(p.users, u)
		if cred.format != FormatBcrypt {
			p.insecure = append(p.insecure, u)
		}
	}
	if err := sc.Err(); err != nil {
		p.problems = append(p.problems, problem{n + 1, reasonMalformed, "line too long; the rest is ignored"})
	}
	return p
}

// invalidUsername says why name cannot be a user (it must be usable as a
// header value and typed in a browser's login dialog), or "".
func invalidUsername(name string) string {
	switch {
	case name == "":
		return "empty user name"
	case len(name) > maxUsername:
		return fmt.Sprintf("user name longer than %d bytes", maxUsername)
	case !utf8.ValidString(name):
		return "user name is not UTF-8"
	case strings.ContainsFunc(name, unicode.IsControl):
		return "control character in user name"
	}
	return ""
}

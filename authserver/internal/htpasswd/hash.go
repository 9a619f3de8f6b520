package htpasswd

import (
	"fmt"
	"strings"

	gohtpasswd "github.com/tg123/go-htpasswd"
	"golang.org/x/crypto/bcrypt"
)

// Hash formats, as named in logs and documentation.
const (
	FormatBcrypt   = "bcrypt"     // $2a$, $2b$, $2x$, $2y$
	FormatSHA1     = "{SHA}"      // unsalted SHA-1
	FormatSSHA     = "{SSHA}"     // salted SHA-1
	FormatMD5Crypt = "md5-crypt"  // $apr1$ (Apache) and $1$
	FormatSHACrypt = "sha-crypt"  // $5$ and $6$
	FormatPlain    = "plain text" // anything else, or {PLAIN}password
)

// credential is one user's stored password.
type credential struct {
	hash   string // the stored encoding, as written; part of the cache key
	format string
	cost   int                      // bcrypt only
	legacy gohtpasswd.EncodedPasswd // the matcher of a non-bcrypt format
}

// matches runs the (expensive) comparison. compare is bcrypt's, injectable
// so that tests can see which hash every path compares against.
func (c *credential) matches(compare func(hash, password []byte) error, password string) bool {
	if c.format == FormatBcrypt {
		return compare([]byte(c.hash), []byte(password)) == nil
	}
	return c.legacy.MatchesPassword(password)
}

// maxBcryptPassword is the most bcrypt reads of a password: bytes after the
// 72nd are ignored, so "secret...<anything>" would match the hash of
// "secret..." alone. Longer passwords are refused instead of truncated.
const maxBcryptPassword = 72

// verifiable reports whether the hash can verify every byte of password.
// It depends only on the stored format, and unknown users are compared
// against a bcrypt dummy, so refusing here costs the same for a known
// bcrypt user and an unknown one.
func (c *credential) verifiable(password string) bool {
	return c.format != FormatBcrypt || len(password) <= maxBcryptPassword
}

// maxBcryptCost refuses hashes so slow that verifying them (or building
// the dummy hash for unknown users at that cost) would be a denial of
// service: cost 16 is already ~4 s per check on one core.
const maxBcryptCost = 16

// hashError is why a stored password is not used. reason is a metric label.
type hashError struct {
	reason string
	msg    string
}

func (e *hashError) Error() string { return e.msg }

// Reasons a line is skipped; values of the reason label of
// portcullis_authserver_htpasswd_load_errors_total.
const (
	reasonMalformed   = "malformed_line"
	reasonInvalidUser = "invalid_user"
	reasonDuplicate   = "duplicate_user"
	reasonInsecure    = "insecure_hash"
	reasonUnsupported = "unsupported_hash"
	reasonRead        = "read_error"
)

var loadErrorReasons = []string{reasonMalformed, reasonInvalidUser, reasonDuplicate, reasonInsecure, reasonUnsupported, reasonRead}

// parseHash applies the hash policy to a stored encoding: bcrypt always;
// the legacy formats only when allowInsecure; never a format we cannot
// verify. Error messages never contain the encoding (it is secret-ish).
func parseHash(enc string, allowInsecure bool) (*credential, error) {
	if isBcrypt(enc) {
		cost, err := bcrypt.Cost([]byte(enc))
		if err != nil {
			return nil, &hashError{reasonMalformed, "malformed bcrypt hash"}
		}
		if cost > maxBcryptCost {
			return nil, &hashError{reasonUnsupported, fmt.Sprintf("bcrypt cost %d above %d: every check would take seconds of CPU", cost, maxBcryptCost)}
		}
		return &credential{hash: enc, format: FormatBcrypt, cost: cost}, nil
	}
	format, accept := legacyFormat(enc)
	if accept == nil {
		return nil, &hashError{reasonUnsupported, "unsupported hash format (use bcrypt: htpasswd -B)"}
	}
	if !allowInsecure {
		return nil, &hashError{reasonInsecure, fmt.Sprintf("insecure %s hash rejected (use bcrypt: htpasswd -B, or start with --allow-insecure-hashes)", format)}
	}
	m, err := accept(enc)
	if err != nil || m == nil {
		return nil, &hashError{reasonMalformed, fmt.Sprintf("malformed %s hash", format)}
	}
	return &credential{hash: enc, format: format, legacy: m}, nil
}

func isBcrypt(enc string) bool {
	for _, p := range []string{"$2a$", "$2b$", "$2x$", "$2y$"} {
		if strings.HasPrefix(enc, p) {
			return true
		}
	}
	return false
}

// legacyFormat names a non-bcrypt encoding and the go-htpasswd parser that
// reads it; a nil parser means we cannot verify it.
func legacyFormat(enc string) (string, gohtpasswd.PasswdParser) {
	switch {
	case strings.HasPrefix(enc, "{SHA}"):
		return FormatSHA1, gohtpasswd.AcceptSha
	case strings.HasPrefix(enc, "{SSHA}"):
		return FormatSSHA, gohtpasswd.AcceptSsha
	case strings.HasPrefix(enc, "$apr1$"), strings.HasPrefix(enc, "$1$"):
		return FormatMD5Crypt, gohtpasswd.AcceptMd5
	case strings.HasPrefix(enc, "$5$"), strings.HasPrefix(enc, "$6$"):
		return FormatSHACrypt, gohtpasswd.AcceptCryptSha
	case strings.HasPrefix(enc, "$"):
		return "", nil // argon2, yescrypt, ...: a hash, but not one we verify
	case looksLikeDESCrypt(enc):
		// htpasswd -d. Reading it as plain text would make the hash itself
		// the password; write plain text as {PLAIN}password instead.
		return "", nil
	default:
		return FormatPlain, gohtpasswd.AcceptPlain
	}
}

// isCryptChar tells whether c is of crypt(3)'s alphabet [a-zA-Z0-9./].
func isCryptChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '/'
}

// looksLikeDESCrypt matches the 13-character traditional crypt(3) form.
func looksLikeDESCrypt(enc string) bool {
	if len(enc) != 13 {
		return false
	}
	for i := 0; i < len(enc); i++ {
		c := enc[i]
		if !isCryptChar(c) {
			return false
		}
	}
	return true
}

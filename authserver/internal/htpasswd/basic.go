package htpasswd

import (
	"encoding/base64"
	"strings"
	"unicode"
	"unicode/utf8"
)

// maxAuthorization bounds the Authorization value we decode: user and
// password fit easily; anything longer is an attack or a mistake.
const maxAuthorization = 4096

// parseBasic reads RFC 7617 credentials from an Authorization value. It
// accepts the scheme in any case, strict base64 with padding, and UTF-8
// user-ids and passwords without control characters; anything else is not credentials
// (the caller answers 401, never an error).
func parseBasic(v string) (name, password string, ok bool) {
	if len(v) > maxAuthorization {
		return "", "", false
	}
	scheme, token, found := strings.Cut(strings.TrimSpace(v), " ")
	if !found || !strings.EqualFold(scheme, "Basic") {
		return "", "", false
	}
	raw, err := base64.StdEncoding.Strict().DecodeString(strings.TrimLeft(token, " "))
	if err != nil || !utf8.Valid(raw) {
		return "", "", false
	}
	name, password, found = strings.Cut(string(raw), ":")
	// RFC 7617: neither may contain control characters.
	if !found || name == "" || strings.ContainsFunc(name, unicode.IsControl) || strings.ContainsFunc(password, unicode.IsControl) {
		return "", "", false
	}
	return name, password, true
}

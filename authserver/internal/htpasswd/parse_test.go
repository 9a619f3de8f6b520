package htpasswd

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

// Hashes of "password" in every format the policy knows.
const (
	hashSHA      = "{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g="
	hashSSHA     = "{SSHA}yI6cZwQadOA1e+/f+T+H3eCQQhRzYWx0"
	hashAPR1     = "$apr1$saltsalt$yAAkm4libquA.ZWLHbSBq/"
	hashMD5Crypt = "$1$saltsalt$qjXMvbEw8oaL.CzflDtaK/"
	hashSHA256   = "$5$saltsalt$gOjOtoMpVhru2uyjeJSEc/JaLQWOXMNmlOnj6T4AtC."
	hashSHA512   = "$6$saltsalt$qFmFH.bQmmtXzyBY0s9v7Oicd2z4XSIecDzlB5KiA2/jctKu9YterLp8wwnSq.qc.eoxqOmSuNp2xS0ktL3nh/"
	hashDES      = "saQ4dWyJDI8Ro" // crypt(3) shape
)

func bcryptHash(t testing.TB, password string, cost int) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), cost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func TestHashPolicy(t *testing.T) {
	bc := bcryptHash(t, "password", bcrypt.MinCost)
	for _, tc := range []struct {
		enc          string
		format       string // "" when never accepted
		strictReason string // reason without --allow-insecure-hashes
	}{
		{bc, FormatBcrypt, ""},
		{strings.Replace(bc, "$2a$", "$2y$", 1), FormatBcrypt, ""},
		{strings.Replace(bc, "$2a$", "$2b$", 1), FormatBcrypt, ""},
		{hashSHA, FormatSHA1, reasonInsecure},
		{hashSSHA, FormatSSHA, reasonInsecure},
		{hashAPR1, FormatMD5Crypt, reasonInsecure},
		{hashMD5Crypt, FormatMD5Crypt, reasonInsecure},
		{hashSHA256, FormatSHACrypt, reasonInsecure},
		{hashSHA512, FormatSHACrypt, reasonInsecure},
		{"password", FormatPlain, reasonInsecure},
		{"{PLAIN}password", FormatPlain, reasonInsecure},
		{hashDES, "", reasonUnsupported},
		{"$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA", "", reasonUnsupported},
		{"$2y$10$tooshort", "", reasonMalformed},
		{"$2y$17$" + bc[7:], "", reasonUnsupported}, // too slow to verify
		{"{SHA}not-base64!", "", reasonInsecure},
	} {
		t.Run(tc.enc, func(t *testing.T) {
			// Strict policy: only bcrypt.
			cred, err := parseHash(tc.enc, false)
			if tc.strictReason == "" {
				if err != nil || cred.format != tc.format {
					t.Fatalf("strict: %v, %v; want %s", cred, err, tc.format)
				}
			} else {
				he, _ := err.(*hashError)
				if he == nil || he.reason != tc.strictReason {
					t.Fatalf("strict: err = %v, want reason %s", err, tc.strictReason)
				}
				if strings.Contains(he.msg, tc.enc) {
					t.Errorf("error message %q leaks the hash", he.msg)
				}
			}
			// Insecure policy: the legacy formats verify.
			cred, err = parseHash(tc.enc, true)
			if tc.format == "" {
				if err == nil {
					t.Fatalf("insecure: accepted %q as %s", tc.enc, cred.format)
				}
				return
			}
			if err != nil || cred.format != tc.format {
				t.Fatalf("insecure: %v, %v; want %s", cred, err, tc.format)
			}
			if !cred.matches(bcrypt.CompareHashAndPassword, "password") {
				t.Errorf("%s: the right password does not match", tc.format)
			}
			if cred.matches(bcrypt.CompareHashAndPassword, "Password") {
				t.Errorf("%s: a wrong password matches", tc.format)
			}
		})
	}
	if _, err := parseHash("{SHA}not-base64!", true); err == nil {
		t.Error("malformed {SHA} accepted with --allow-insecure-hashes")
	}
}

func TestParse(t *testing.T) {
	bc := bcryptHash(t, "pw", bcrypt.MinCost)
	data := strings.Join([]string{
		"# comment",
		"alice:" + bc + "\r", // CRLF file
		"",
		"no-colon-line",
		":" + bc,             // empty user
		"bob:",               // empty hash
		"carol:" + hashSHA,   // insecure
		"alice:" + bc,        // duplicate
		"d\x01ve:" + bc,      // control character
		"erin:" + hashSHA512, // insecure
		"frank:" + hashDES,   // unsupported
		"  grace:" + bc + "  ",
		"h\xffnk:" + bc, // not UTF-8
		strings.Repeat("u", 300) + ":" + bc,
	}, "\n")
	got := parse([]byte(data), false)
	var names []string
	for _, u := range got.users {
		names = append(names, u.name)
	}
	if strings.Join(names, ",") != "alice,grace" {
		t.Errorf("users = %v, want alice,grace", names)
	}
	want := []string{
		"4 " + reasonMalformed, "5 " + reasonInvalidUser, "6 " + reasonMalformed, "7 " + reasonInsecure,
		"8 " + reasonDuplicate, "9 " + reasonInvalidUser, "10 " + reasonInsecure, "11 " + reasonUnsupported,
		"13 " + reasonInvalidUser, "14 " + reasonInvalidUser,
	}
	var problems []string
	for _, p := range got.problems {
		problems = append(problems, fmt.Sprintf("%d %s", p.line, p.reason))
		for _, secret := range []string{bc, hashSHA, hashSHA512, hashDES} {
			if strings.Contains(p.msg, secret) {
				t.Errorf("line %d: message %q leaks a hash", p.line, p.msg)
			}
		}
	}
	if strings.Join(problems, "|") != strings.Join(want, "|") {
		t.Errorf("problems:\n got %v\nwant %v", problems, want)
	}

	insecure := parse([]byte("carol:"+hashSHA+"\nerin:"+hashSHA512+"\nalice:"+bc), true)
	if len(insecure.users) != 3 || len(insecure.insecure) != 2 || len(insecure.problems) != 0 {
		t.Errorf("with --allow-insecure-hashes: %d users, %d insecure, problems %v", len(insecure.users), len(insecure.insecure), insecure.problems)
	}
}

func TestParseBasic(t *testing.T) {
	b64 := func(s string) string { return base64Std(s) }
	for _, tc := range []struct {
		header         string
		user, password string
		ok             bool
	}{
		{"Basic " + b64("alice:secret"), "alice", "secret", true},
		{"basic " + b64("alice:secret"), "alice", "secret", true},
		{"BASIC   " + b64("alice:se:cr:et"), "alice", "se:cr:et", true},
		{"Basic " + b64("alice:"), "alice", "", true},
		{"Basic " + b64("ünïcode:pässword"), "ünïcode", "pässword", true},
		{"", "", "", false},
		{"Basic", "", "", false},
		{"Basic ", "", "", false},
		{"Bearer " + b64("alice:secret"), "", "", false},
		{"Basic !!!!", "", "", false},
		{"Basic " + strings.TrimRight(b64("alice:secret1"), "="), "", "", false}, // unpadded
		{"Basic " + b64("no-colon"), "", "", false},
		{"Basic " + b64(":secret"), "", "", false},
		{"Basic " + b64("al\x00ice:secret"), "", "", false},
		{"Basic " + b64("alice:sec\nret"), "", "", false},
		{"Basic " + b64("\xff\xfe:secret"), "", "", false},
		{"Basic " + b64("alice:"+strings.Repeat("x", maxAuthorization)), "", "", false},
	} {
		user, password, ok := parseBasic(tc.header)
		if ok != tc.ok || user != tc.user || password != tc.password {
			t.Errorf("parseBasic(%.40q) = %q, %q, %v; want %q, %q, %v", tc.header, user, password, ok, tc.user, tc.password, tc.ok)
		}
	}
}

func FuzzParseBasic(f *testing.F) {
	for _, s := range []string{"Basic YWxpY2U6c2VjcmV0", "basic Og==", "Basic \xff", "Bearer x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		user, password, ok := parseBasic(header)
		if ok && (user == "" || strings.ContainsAny(user+password, "\x00\r\n") || strings.Contains(user, ":")) {
			t.Fatalf("accepted %q as %q:%q", header, user, password)
		}
	})
}

func FuzzParse(f *testing.F) {
	bc := bcryptHash(f, "pw", bcrypt.MinCost)
	for _, s := range []string{"alice:" + bc, "a:" + hashSHA + "\r\nb:" + hashDES, "#c\n\n:x\nno-colon", "u:$2y$99$" + bc[7:]} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, insecure bool) {
		p := parse(data, insecure)
		seen := map[string]bool{}
		for _, u := range p.users {
			if invalidUsername(u.name) != "" || strings.Contains(u.name, ":") || seen[u.name] {
				t.Fatalf("bad user %q accepted", u.name)
			}
			seen[u.name] = true
			if !insecure && u.cred.format != FormatBcrypt {
				t.Fatalf("%s accepted without --allow-insecure-hashes", u.cred.format)
			}
		}
	})
}

package core

import "k8s.io/apimachinery/pkg/util/validation"

// DNSSubdomainErrors is validation.IsDNS1123Subdomain, which matches a
// regular expression: a build checks the name of every root, and most are
// valid, so a valid name is recognised by a scan of its bytes first.
func DNSSubdomainErrors(name string) []string {
	if isDNSSubdomain(name) {
		return nil
	}
	return validation.IsDNS1123Subdomain(name)
}

// isDNSSubdomain: name is at most 253 bytes of dot-separated labels, each
// of lowercase letters, digits and hyphens, starting and ending with a
// letter or digit (exactly what IsDNS1123Subdomain accepts).
func isDNSSubdomain(name string) bool {
	if name == "" || len(name) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	start := 0
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '.' {
			label := name[start:i]
			if label == "" || label[0] == '-' || label[len(label)-1] == '-' {
				return false
			}
			start = i + 1
			continue
		}
		if c := name[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

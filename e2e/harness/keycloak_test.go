package harness

import (
	"slices"
	"testing"
	"time"
)

// TestKeycloakRepresentations pins what the admin API is sent for the
// settings docs/authserver-oidc.md names (no Keycloak needed).
func TestKeycloakRepresentations(t *testing.T) {
	c := realmClients([]KeycloakClient{{ClientID: "portcullis", Secret: "s",
		RedirectURIs: []string{"https://a/cb"}, PostLogoutRedirectURIs: []string{"https://a/out", "https://b/out"},
		ServiceAccount: true, Audience: "portcullis", AccessTokenLifespan: 10 * time.Minute}})[0]
	attrs := c["attributes"].(map[string]string)
	if attrs["pkce.code.challenge.method"] != "S256" || attrs["post.logout.redirect.uris"] != "https://a/out##https://b/out" ||
		attrs["access.token.lifespan"] != "600" {
		t.Errorf("client attributes %v", attrs)
	}
	if c["publicClient"] != false || c["standardFlowEnabled"] != true || c["serviceAccountsEnabled"] != true ||
		c["directAccessGrantsEnabled"] != false || c["implicitFlowEnabled"] != false {
		t.Errorf("client flows %v", c)
	}
	mapper := c["protocolMappers"].([]map[string]any)[0]
	if cfg := mapper["config"].(map[string]string); mapper["protocolMapper"] != "oidc-audience-mapper" ||
		cfg["included.client.audience"] != "portcullis" || cfg["access.token.claim"] != "true" {
		t.Errorf("audience mapper %v", mapper)
	}
	if pub := realmClients([]KeycloakClient{{ClientID: "cli", DirectAccessGrants: true}})[0]; pub["publicClient"] != true ||
		pub["standardFlowEnabled"] != false || pub["protocolMappers"] != nil {
		t.Errorf("public client %v", pub)
	}

	users := []KeycloakUser{{Username: "a", Email: "a@x", Groups: []string{"g1", "g2"}}, {Username: "b", Groups: []string{"g2", "g3"}}}
	var names []string
	for _, g := range realmGroups(users, []string{"g0", "g1"}) {
		names = append(names, g["name"].(string))
	}
	if !slices.Equal(names, []string{"g0", "g1", "g2", "g3"}) {
		t.Errorf("groups %v, want each once", names)
	}
	u := realmUsers(users)[0]
	if !slices.Equal(u["groups"].([]string), []string{"/g1", "/g2"}) || u["firstName"] == "" || u["lastName"] == "" {
		t.Errorf("user %v: want group paths and both names (Keycloak's user profile requires them)", u)
	}
}

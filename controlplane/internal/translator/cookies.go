package translator

import (
	"fmt"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	luav3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/lua/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// LuaFilterName is Envoy's Lua filter, which rewrites cookies (Envoy has
// no filter of its own for it; Contour does the same).
const LuaFilterName = "envoy.filters.http.lua"

// cookieFilter is the Lua filter of an HCM some of whose routes rewrite
// cookies: without code of its own and disabled, it runs only on those
// routes (and clusters), with their code (typed_per_filter_config).
type cookieFilter struct{}

func (cookieFilter) name() string { return LuaFilterName }

func (cookieFilter) needed(h hcmSettings) bool { return h.cookies }

func (cookieFilter) httpFilters(hcmSettings) []*hcmv3.HttpFilter {
	return []*hcmv3.HttpFilter{disabledByDefault(typedHTTPFilter(LuaFilterName, &luav3.Lua{}))}
}

func (cookieFilter) perRoute(r *ir.Route) (string, proto.Message) {
	if len(r.CookieRewrites) == 0 {
		return "", nil
	}
	return LuaFilterName, cookieRewriteConfig(r.CookieRewrites)
}

// routesRewriteCookies says whether a route of hosts, or one of its
// clusters, rewrites cookies.
func routesRewriteCookies(hosts []*ir.VirtualHost) bool {
	for _, vh := range hosts {
		for _, r := range vh.Routes {
			if len(r.CookieRewrites) > 0 {
				return true
			}
			for _, c := range r.Clusters {
				if len(c.CookieRewrites) > 0 {
					return true
				}
			}
		}
	}
	return false
}

// cookieRewriteConfig is the Lua filter's configuration of a route or
// cluster: the code that rewrites its responses' Set-Cookie headers.
func cookieRewriteConfig(rs []ir.CookieRewrite) *luav3.LuaPerRoute {
	return &luav3.LuaPerRoute{Override: &luav3.LuaPerRoute_SourceCode{SourceCode: &corev3.DataSource{
		Specifier: &corev3.DataSource_InlineString{InlineString: cookieRewriteLua(rs)},
	}}}
}

// cookieRewriteLua is the Lua code of rewrites rs: a table of the rules by
// cookie name, then cookieRewriteCode. Every value is a Lua string of
// decimal escapes: nothing written in a policy is read as code.
func cookieRewriteLua(rs []ir.CookieRewrite) string {
	var b strings.Builder
	b.WriteString("local rules = {\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "  [%s] = {", luaString(r.Name))
		if r.Path != "" {
			fmt.Fprintf(&b, "path = %s, ", luaString(r.Path))
		}
		if r.Domain != "" {
			fmt.Fprintf(&b, "domain = %s, ", luaString(r.Domain))
		}
		if r.Secure != nil {
			fmt.Fprintf(&b, "secure = %t, ", *r.Secure)
		}
		if r.SameSite != "" {
			fmt.Fprintf(&b, "samesite = %s, ", luaString(r.SameSite))
		}
		b.WriteString("},\n")
	}
	b.WriteString("}\n")
	b.WriteString(cookieRewriteCode)
	return b.String()
}

// luaString is s as a Lua string literal: letters and digits as they are,
// every other byte a decimal escape.
func luaString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "\\%03d", c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// cookieRewriteCode rewrites each Set-Cookie header of the response whose
// cookie has a rule: the attributes the rule sets are removed and added
// with its values (Secure: added when true, removed when false); the
// others are kept, in their order.
const cookieRewriteCode = `
local function trim(s)
  return (s:gsub("^%s+", ""):gsub("%s+$", ""))
end

local function rewrite(v)
  local name = v:match("^([^=;]*)=")
  if name == nil then
    return v
  end
  local r = rules[trim(name)]
  if r == nil then
    return v
  end
  local parts = {}
  local first = true
  for part in (v .. ";"):gmatch("([^;]*);") do
    if first then
      parts[#parts + 1] = part
      first = false
    else
      local attr = trim(part:match("^([^=]*)")):lower()
      local replaced = (attr == "path" and r.path ~= nil) or (attr == "domain" and r.domain ~= nil) or
        (attr == "secure" and r.secure ~= nil) or (attr == "samesite" and r.samesite ~= nil)
      if not replaced and trim(part) ~= "" then
        parts[#parts + 1] = part
      end
    end
  end
  if r.path ~= nil then
    parts[#parts + 1] = " Path=" .. r.path
  end
  if r.domain ~= nil then
    parts[#parts + 1] = " Domain=" .. r.domain
  end
  if r.secure == true then
    parts[#parts + 1] = " Secure"
  end
  if r.samesite ~= nil then
    parts[#parts + 1] = " SameSite=" .. r.samesite
  end
  return table.concat(parts, ";")
end

function envoy_on_response(response_handle)
  local headers = response_handle:headers()
  local n = headers:getNumValues("set-cookie")
  if n == 0 then
    return
  end
  local values = {}
  for i = 0, n - 1 do
    values[#values + 1] = rewrite(headers:getAtIndex("set-cookie", i))
  end
  headers:remove("set-cookie")
  for _, v in ipairs(values) do
    headers:add("set-cookie", v)
  end
end
`

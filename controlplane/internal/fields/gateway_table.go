package fields

// The Gateway API table: every field path of the spec of each kind of
// GatewayKinds, as the builder (builder/gateway*.go) treats it today:
//
//   - Implemented: the builder translates it or uses it; a note says
//     which of its values it refuses (with the condition it sets);
//   - Refused: setting it stops what it is part of (the Gateway or a
//     listener is not accepted, a rule or a backend answers 500, a policy
//     is not accepted), with the condition, reason and message the
//     builder gives;
//   - Ignored: the builder reads nothing of it and serves the object as
//     if it were unset, without a warning.
//
// Unlike the projectcontour.io table, it does not drive the builder,
// which checks these fields by hand (gatewaylisteners.go,
// gatewayhttproute.go, gatewayfilters.go, ...): it documents them
// (docs/gateway-api-fields.md), and TestGatewayTableCoversTheTypes fails
// on a path of the Go types (a field a new gateway-api version adds) that
// it lacks, so that someone decides what the builder does with it.
// TestGatewayTableSaysWhatTheBuilderDoes sets every refused and ignored
// field and checks the builder's status says so (or does not change).
var gatewayTable = map[string]entries{
	KindGatewayClass: tree("spec", entries{
		"controllerName": yes,
		"parametersRef":  Refused(`Accepted False, InvalidParameters: "spec.parametersRef is not supported: this controller takes no parameters"; the class's Gateways are not accepted`),
		"description":    Ignored("a description for people: nothing to serve"),
	}),

	KindGateway: tree("spec",
		entries{
			"gatewayClassName":             yes,
			"addresses":                    Refused(`Accepted False, UnsupportedAddress: "spec.addresses cannot be honoured: Envoy's addresses are those of its Service, not chosen per Gateway"`),
			"infrastructure":               ImplementedExcept("read for its parametersRef, which is refused; labels and annotations are ignored"),
			"infrastructure.labels":        infrastructureMeta,
			"infrastructure.annotations":   infrastructureMeta,
			"infrastructure.parametersRef": Refused(`Accepted False, InvalidParameters: "spec.infrastructure.parametersRef is not supported: this controller takes no parameters"`),
			"allowedListeners":             Refused(`unless namespaces.from is None: Accepted False, UnsupportedField: "spec.allowedListeners (ListenerSets) is not supported"`),
			"tls":                          Refused(`Accepted False, UnsupportedField: "spec.tls (backend client certificates, frontend client validation) is not supported"`),
			"defaultScope":                 Refused(`Accepted False, UnsupportedField: "spec.defaultScope (default Gateways) is not supported"`),
		},
		tree("listeners", listener),
	),

	KindHTTPRoute: tree("spec",
		routeCommon,
		entries{
			"rules.matches.path":              yes,
			"rules.matches.path.type":         ImplementedExcept("Exact, PathPrefix and RegularExpression (RE2, within Envoy's program size); another type: PartiallyInvalid, UnsupportedValue, and the match is not served"),
			"rules.matches.path.value":        yes,
			"rules.matches.queryParams":       yes,
			"rules.matches.queryParams.type":  matchType,
			"rules.matches.queryParams.name":  yes,
			"rules.matches.queryParams.value": yes,
			"rules.matches.method":            yes,

			"rules.filters.requestRedirect":                         yes,
			"rules.filters.requestRedirect.scheme":                  ImplementedExcept("http or https; another makes the rule answer 500"),
			"rules.filters.requestRedirect.hostname":                yes,
			"rules.filters.requestRedirect.path":                    yes,
			"rules.filters.requestRedirect.path.type":               yes,
			"rules.filters.requestRedirect.path.replaceFullPath":    yes,
			"rules.filters.requestRedirect.path.replacePrefixMatch": yes,
			"rules.filters.requestRedirect.port":                    yes,
			"rules.filters.requestRedirect.statusCode":              ImplementedExcept("301 or 302; another makes the rule answer 500"),

			"rules.filters.urlRewrite":                         yes,
			"rules.filters.urlRewrite.hostname":                yes,
			"rules.filters.urlRewrite.path":                    yes,
			"rules.filters.urlRewrite.path.type":               yes,
			"rules.filters.urlRewrite.path.replaceFullPath":    yes,
			"rules.filters.urlRewrite.path.replacePrefixMatch": yes,

			"rules.filters.cors":         Refused(`PartiallyInvalid, UnsupportedValue: "filter type \"CORS\" is not supported: the rule answers 500"`),
			"rules.filters.externalAuth": Refused(`PartiallyInvalid, UnsupportedValue: "filter type \"ExternalAuth\" is not supported: the rule answers 500" (an ExtAuthPolicy attaches an authorization server)`),

			"rules.backendRefs.filters.requestRedirect": refusedOnBackend("RequestRedirect"),
			"rules.backendRefs.filters.urlRewrite":      refusedOnBackend("URLRewrite"),
			"rules.backendRefs.filters.cors":            refusedOnBackend("CORS"),
			"rules.backendRefs.filters.externalAuth":    refusedOnBackend("ExternalAuth"),

			"rules.timeouts":                yes,
			"rules.timeouts.request":        yes,
			"rules.timeouts.backendRequest": ImplementedExcept("not longer than request; each a GEP-2257 duration: otherwise PartiallyInvalid, UnsupportedValue and the rule answers 500"),
			"rules.retry":                   Refused(`PartiallyInvalid, UnsupportedValue: "rules[i].retry is not supported: the rule answers 500"`),
		},
		tree("rules.matches.headers", headerMatch),
		tree("rules.filters.type", entries{"": ImplementedExcept("RequestHeaderModifier, ResponseHeaderModifier, RequestRedirect, URLRewrite, RequestMirror (several) and ExtensionRef (several); CORS and ExternalAuth make the rule answer 500")}),
	),

	KindGRPCRoute: tree("spec",
		routeCommon,
		entries{
			"rules.matches.method":         yes,
			"rules.matches.method.type":    matchType,
			"rules.matches.method.service": yes,
			"rules.matches.method.method":  yes,
		},
		tree("rules.matches.headers", headerMatch),
		tree("rules.filters.type", entries{"": ImplementedExcept("RequestHeaderModifier, ResponseHeaderModifier, RequestMirror (several) and ExtensionRef (several); another makes the rule answer 500")}),
	),

	KindReferenceGrant: tree("spec", entries{
		"from":           yes,
		"from.group":     yes,
		"from.kind":      yes,
		"from.namespace": yes,
		"to":             yes,
		"to.group":       yes,
		"to.kind":        yes,
		"to.name":        yes,
	}),

	KindExtAuthPolicy: tree("spec",
		extAuthSettings,
		tree("targetRefs", policyTargetRef),
		tree("defaults", entries{"": yes}, extAuthSettings),
		tree("overrides", entries{"": yes}, extAuthSettings),
	),

	KindExtProcPolicy: tree("spec",
		extProcSettings,
		tree("targetRefs", policyTargetRef),
		tree("defaults", entries{"": yes}, extProcSettings),
		tree("overrides", entries{"": yes}, extProcSettings),
	),
}

// extAuthSettings are an ExtAuthPolicy's settings: at the top of its spec,
// in defaults and in overrides (GEP-713).
var extAuthSettings = merged(
	entries{
		"responseTimeout": yes,
		"failOpen":        yes,
		"disabled":        yes,
	},
	tree("extensionRef", extensionRef),
	tree("authPolicy", authPolicy),
	tree("withRequestBody", entries{
		"":                    yes,
		"maxRequestBytes":     yes,
		"allowPartialMessage": yes,
		"packAsBytes":         yes,
	}),
)

// extProcSettings are an ExtProcPolicy's settings, as extAuthSettings.
var extProcSettings = merged(
	entries{"disabled": yes},
	tree("processor", extProc),
)

// merged is the union of parts, mounted where they are.
func merged(parts ...entries) entries {
	out := entries{}
	for _, p := range parts {
		for k, s := range p {
			out.add(k, s)
		}
	}
	return out
}

// listener is a Gateway's listener (spec.listeners).
var listener = entries{
	"":         yes,
	"name":     yes,
	"hostname": yes,
	"port":     yes,
	"protocol": ImplementedExcept(`HTTP and HTTPS; another: the listener's Accepted False, UnsupportedProtocol`),

	"tls":                           yes,
	"tls.mode":                      ImplementedExcept(`Terminate; Passthrough: the listener's Accepted False, UnsupportedValue`),
	"tls.certificateRefs":           yes,
	"tls.certificateRefs.group":     yes,
	"tls.certificateRefs.kind":      yes,
	"tls.certificateRefs.name":      yes,
	"tls.certificateRefs.namespace": yes,
	"tls.options":                   Refused(`the listener's Accepted False, UnsupportedValue: "tls.options are not supported"`),

	"allowedRoutes":                     yes,
	"allowedRoutes.namespaces":          yes,
	"allowedRoutes.namespaces.from":     yes,
	"allowedRoutes.namespaces.selector": yes,
	"allowedRoutes.kinds":               ImplementedExcept("HTTPRoute and GRPCRoute; another kind: ResolvedRefs False, InvalidRouteKinds (the others are still allowed)"),
	"allowedRoutes.kinds.group":         yes,
	"allowedRoutes.kinds.kind":          yes,
}

// routeCommon is what HTTPRoute and GRPCRoute share (their parents,
// hostnames, rules, the filters both have, backends and session
// persistence).
var routeCommon = merge(
	entries{
		"parentRefs":             yes,
		"parentRefs.group":       yes,
		"parentRefs.kind":        yes,
		"parentRefs.namespace":   yes,
		"parentRefs.name":        yes,
		"parentRefs.sectionName": yes,
		"parentRefs.port":        yes,
		"useDefaultGateways":     Ignored("no Gateway of portcullis is a default Gateway (a Gateway's spec.defaultScope is refused): a route attaches through its parentRefs only"),
		"hostnames":              yes,

		"rules":         yes,
		"rules.name":    yes,
		"rules.matches": yes,
		"rules.filters": yes,

		"rules.backendRefs":           yes,
		"rules.backendRefs.group":     ImplementedExcept(`a Service, a projectcontour.io ExtensionService or a kind an extension server registered (extensions[].backendResources); another: ResolvedRefs False, InvalidKind`),
		"rules.backendRefs.kind":      yes,
		"rules.backendRefs.name":      yes,
		"rules.backendRefs.namespace": yes,
		"rules.backendRefs.port":      yes,
		"rules.backendRefs.weight":    yes,
		"rules.backendRefs.filters":   yes,

		"rules.backendRefs.filters.type":          ImplementedExcept("RequestHeaderModifier and ResponseHeaderModifier; another makes the backend answer 500"),
		"rules.backendRefs.filters.requestMirror": refusedOnBackend("RequestMirror"),
		"rules.backendRefs.filters.extensionRef":  Refused(`ResolvedRefs False, InvalidKind: "ExtensionRef: no extension of this kind is registered: the backend answers 500"`),

		"rules.filters.extensionRef":       ImplementedExcept("a kind an extension server registered (extensions[].resources), handed to it; another: ResolvedRefs False, InvalidKind and the rule answers 500"),
		"rules.filters.extensionRef.group": yes,
		"rules.filters.extensionRef.kind":  yes,
		"rules.filters.extensionRef.name":  yes,

		"rules.sessionPersistence": Refused(`PartiallyInvalid, UnsupportedValue: "rules[i].sessionPersistence is not supported: the rule answers 500"`),
	},
	tree("rules.filters.requestHeaderModifier", headerFilter),
	tree("rules.filters.responseHeaderModifier", headerFilter),
	tree("rules.backendRefs.filters.requestHeaderModifier", headerFilter),
	tree("rules.backendRefs.filters.responseHeaderModifier", headerFilter),
	tree("rules.filters.requestMirror", mirrorFilter),
)

// headerMatch is a route's header match.
var headerMatch = entries{
	"":      yes,
	"type":  matchType,
	"name":  yes,
	"value": yes,
}

var headerFilter = entries{
	"":          yes,
	"set":       yes,
	"set.name":  yes,
	"set.value": yes,
	"add":       yes,
	"add.name":  ImplementedExcept(`not Host: "adding a \"host\" header is not supported"`),
	"add.value": yes,
	"remove":    yes,
}

var mirrorFilter = entries{
	"":                     yes,
	"backendRef":           yes,
	"backendRef.group":     yes,
	"backendRef.kind":      yes,
	"backendRef.name":      yes,
	"backendRef.namespace": yes,
	"backendRef.port":      yes,
	"percent":              yes,
	"fraction":             yes,
	"fraction.numerator":   yes,
	"fraction.denominator": yes,
}

var policyTargetRef = entries{
	"":            yes,
	"group":       yes,
	"kind":        ImplementedExcept("a Gateway, an HTTPRoute or a GRPCRoute of group gateway.networking.k8s.io; another: Accepted False, Invalid"),
	"name":        yes,
	"sectionName": yes,
}

// infrastructureMeta: a Gateway's own Service (gateway.servicePerGateway,
// builder/gatewayservices.go) is labelled by portcullis and annotated from
// the Envoy Service, not from the Gateway's infrastructure.
var infrastructureMeta = Ignored("not applied: with gateway.servicePerGateway, a Gateway's own Service gets portcullis's label and the Envoy Service's annotations")

// matchType is the type of a header, query parameter or gRPC method
// match: an invalid match is left out (ruleRoutes), it cannot even answer
// 500.
var matchType = ImplementedExcept("Exact and RegularExpression; another type: PartiallyInvalid, UnsupportedValue, and the match is not served")

// refusedOnBackend is a filter a backendRef may not have.
func refusedOnBackend(typ string) Support {
	return Refused(`PartiallyInvalid, UnsupportedValue: "filter type \"` + typ + `\" is not supported on a backend: the backend answers 500"`)
}

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
			"gatewayClassName":                                                yes,
			"addresses":                                                       ImplementedExcept("an entry without a value asks for an address of its type (GatewayAddressEmpty): the Gateway gets Envoy's, or its own Service's; Programmed False, AddressNotAssigned, while none is an IP"),
			"addresses.type":                                                  ImplementedExcept(`IPAddress (the default); another type is refused: Accepted False, UnsupportedAddress: "spec.addresses[i]: an address of type … cannot be assigned: only IPAddress"`),
			"addresses.value":                                                 Refused(`a static address: Accepted False, UnsupportedAddress: "spec.addresses[i]: a static address (…) cannot be honoured: Envoy's addresses are those of its Service, not chosen per Gateway"`),
			"infrastructure":                                                  ImplementedExcept("read for its parametersRef, which is refused; labels and annotations are ignored"),
			"infrastructure.labels":                                           infrastructureMeta,
			"infrastructure.annotations":                                      infrastructureMeta,
			"infrastructure.parametersRef":                                    Refused(`Accepted False, InvalidParameters: "spec.infrastructure.parametersRef is not supported: this controller takes no parameters"`),
			"allowedListeners":                                                ImplementedNote("which ListenerSets may add listeners to the Gateway (None by default): docs/gateway-api.md, \"ListenerSets\""),
			"allowedListeners.namespaces":                                     yes,
			"allowedListeners.namespaces.from":                                ImplementedNote("Same, All, Selector (the Namespaces' labels), None; a ListenerSet not allowed: its Accepted False, NotAllowed"),
			"allowedListeners.namespaces.selector":                            yes,
			"tls":                                                             yes,
			"tls.backend":                                                     ImplementedNote("the client certificate presented to the TLS backends of the Gateway's routes"),
			"tls.backend.clientCertificateRef":                                ImplementedNote("a TLS Secret; another namespace's with a ReferenceGrant; one that does not resolve: the Gateway's ResolvedRefs False, no certificate presented"),
			"tls.backend.clientCertificateRef.group":                          yes,
			"tls.backend.clientCertificateRef.kind":                           yes,
			"tls.backend.clientCertificateRef.name":                           yes,
			"tls.backend.clientCertificateRef.namespace":                      yes,
			"tls.frontend":                                                    ImplementedNote("the client certificate validation of the HTTPS listeners: a listener without a valid CA certificate is not accepted (NoValidCACertificate)"),
			"tls.frontend.default":                                            yes,
			"tls.frontend.default.validation":                                 yes,
			"tls.frontend.default.validation.caCertificateRefs":               ImplementedNote("ConfigMaps or Secrets (ca.crt); another namespace's with a ReferenceGrant"),
			"tls.frontend.default.validation.caCertificateRefs.group":         yes,
			"tls.frontend.default.validation.caCertificateRefs.kind":          yes,
			"tls.frontend.default.validation.caCertificateRefs.name":          yes,
			"tls.frontend.default.validation.caCertificateRefs.namespace":     yes,
			"tls.frontend.default.validation.mode":                            ImplementedNote("AllowValidOnly; AllowInsecureFallback requests a certificate and lets any client in (InsecureFrontendValidationMode)"),
			"tls.frontend.perPort":                                            yes,
			"tls.frontend.perPort.port":                                       yes,
			"tls.frontend.perPort.tls":                                        yes,
			"tls.frontend.perPort.tls.validation":                             yes,
			"tls.frontend.perPort.tls.validation.caCertificateRefs":           ImplementedNote("as default's"),
			"tls.frontend.perPort.tls.validation.caCertificateRefs.group":     yes,
			"tls.frontend.perPort.tls.validation.caCertificateRefs.kind":      yes,
			"tls.frontend.perPort.tls.validation.caCertificateRefs.name":      yes,
			"tls.frontend.perPort.tls.validation.caCertificateRefs.namespace": yes,
			"tls.frontend.perPort.tls.validation.mode":                        ImplementedNote("as default's"),
			"defaultScope":                                                    Refused(`Accepted False, UnsupportedField: "spec.defaultScope (default Gateways) is not supported"`),
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
			"rules.filters.requestRedirect.statusCode":              ImplementedExcept("301, 302, 303, 307 or 308; another makes the rule answer 500"),

			"rules.filters.urlRewrite":                         yes,
			"rules.filters.urlRewrite.hostname":                yes,
			"rules.filters.urlRewrite.path":                    yes,
			"rules.filters.urlRewrite.path.type":               yes,
			"rules.filters.urlRewrite.path.replaceFullPath":    yes,
			"rules.filters.urlRewrite.path.replacePrefixMatch": yes,

			"rules.filters.cors":                  ImplementedNote("the rule's own policy; Envoy answers the preflights, those of origins it does not allow too (without access-control headers)"),
			"rules.filters.cors.allowOrigins":     ImplementedExcept(`"*", or http(s)://host[:port] whose host may start with "*." (one or more labels); another makes the rule answer 500`),
			"rules.filters.cors.allowCredentials": yes,
			"rules.filters.cors.allowMethods":     ImplementedExcept(`the API's methods, or "*" alone (Envoy answers with the method asked for); another makes the rule answer 500`),
			"rules.filters.cors.allowHeaders":     ImplementedExcept(`header names, or "*" alone (Envoy answers with the headers asked for); another makes the rule answer 500`),
			"rules.filters.cors.exposeHeaders":    ImplementedExcept("header names; another makes the rule answer 500"),
			"rules.filters.cors.maxAge":           ImplementedExcept("5 when unset; a negative one makes the rule answer 500"),
			"rules.filters.externalAuth":          Refused(`PartiallyInvalid, UnsupportedValue: "filter type \"ExternalAuth\" is not supported: the rule answers 500" (an ExtAuthPolicy attaches an authorization server)`),

			"rules.backendRefs.filters.requestRedirect": refusedOnBackend("RequestRedirect"),
			"rules.backendRefs.filters.urlRewrite":      refusedOnBackend("URLRewrite"),
			"rules.backendRefs.filters.cors":            refusedOnBackend("CORS"),
			"rules.backendRefs.filters.externalAuth":    refusedOnBackend("ExternalAuth"),

			"rules.timeouts":                yes,
			"rules.timeouts.request":        yes,
			"rules.timeouts.backendRequest": ImplementedExcept("not longer than request; each a GEP-2257 duration: otherwise PartiallyInvalid, UnsupportedValue and the rule answers 500"),
			"rules.retry":                   ImplementedNote("each request to a backend is retried on the codes, and on connection errors and tries without an answer (reset, or cut by timeouts.backendRequest)"),
			"rules.retry.codes":             ImplementedExcept("400 to 599; another makes the rule answer 500"),
			"rules.retry.attempts":          ImplementedExcept("1 when unset; 0 makes the rule answer 500"),
			"rules.retry.backoff":           ImplementedExcept("the least wait before a retry (Envoy's base interval, doubled at each retry up to ten times); Envoy's 25ms when unset or 0; not a GEP-2257 duration: the rule answers 500"),
		},
		tree("rules.matches.headers", headerMatch),
		tree("rules.filters.type", entries{"": ImplementedExcept("RequestHeaderModifier, ResponseHeaderModifier, RequestRedirect, URLRewrite, RequestMirror (several), CORS and ExtensionRef (several); ExternalAuth makes the rule answer 500")}),
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

	KindTLSRoute: tree("spec", streamRoute, entries{"hostnames": yes}),

	KindTCPRoute: tree("spec", streamRoute),

	KindUDPRoute: tree("spec", without(streamRoute, "rules.backendRefs", "rules.backendRefs.group", "rules.backendRefs.port"), entries{
		"rules.backendRefs":       ImplementedExcept("one cluster of their endpoints, the weights applied per session; none valid, one taking traffic invalid, or an ExternalName Service among several: every datagram is dropped (the proxy cannot drop a share alone)"),
		"rules.backendRefs.group": ImplementedExcept(`a Service; another kind: ResolvedRefs False, InvalidKind`),
		"rules.backendRefs.port":  ImplementedExcept("the Service's UDP port of that number (a TCP port alone: ResolvedRefs False, BackendNotFound); a port a BackendTLSPolicy applies to: ResolvedRefs False, UnsupportedProtocol"),
	}),

	KindListenerSet: tree("spec",
		entries{
			"parentRef":           ImplementedNote("a Gateway of ours that allows the ListenerSet (its spec.allowedListeners); another parent: no status from this controller"),
			"parentRef.group":     yes,
			"parentRef.kind":      yes,
			"parentRef.name":      yes,
			"parentRef.namespace": yes,
		},
		tree("listeners", listener),
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
	"hostname": ImplementedExcept("ignored on TCP and UDP listeners, as the API says"),
	"port":     yes,
	"protocol": ImplementedExcept(`HTTP, HTTPS, TLS, TCP and UDP (a UDP listener is a socket of its own beside the TCP ones of its port); another: the listener's Accepted False, UnsupportedProtocol`),

	"tls":                           yes,
	"tls.mode":                      ImplementedExcept(`Terminate on HTTPS, Terminate and Passthrough on TLS; Passthrough on HTTPS: the listener's Accepted False, UnsupportedValue`),
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
	"allowedRoutes.kinds":               ImplementedExcept("HTTPRoute and GRPCRoute on HTTP and HTTPS, TLSRoute on TLS, TCPRoute on TCP; another kind: ResolvedRefs False, InvalidRouteKinds (the others are still allowed)"),
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

// streamRoute is what the routes whose connections are proxied
// (TLSRoute, TCPRoute) have: parents, one rule and its backends, which get the bytes as they
// come.
var streamRoute = entries{
	"parentRefs":             yes,
	"parentRefs.group":       yes,
	"parentRefs.kind":        yes,
	"parentRefs.namespace":   yes,
	"parentRefs.name":        yes,
	"parentRefs.sectionName": yes,
	"parentRefs.port":        yes,
	"useDefaultGateways":     Ignored("no Gateway of portcullis is a default Gateway (a Gateway's spec.defaultScope is refused): a route attaches through its parentRefs only"),

	"rules":                       ImplementedExcept(`one (the API's limit); another: PartiallyInvalid, UnsupportedValue, and only the first is served`),
	"rules.name":                  yes,
	"rules.backendRefs":           ImplementedExcept("none valid: connections are closed"),
	"rules.backendRefs.group":     ImplementedExcept(`a Service, a projectcontour.io ExtensionService or a kind an extension server registered (extensions[].backendResources); another: ResolvedRefs False, InvalidKind`),
	"rules.backendRefs.kind":      yes,
	"rules.backendRefs.name":      yes,
	"rules.backendRefs.namespace": yes,
	"rules.backendRefs.port":      ImplementedExcept("plaintext TCP to the port, whatever its Service's protocol annotation or appProtocol"),
	"rules.backendRefs.weight":    yes,
}

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

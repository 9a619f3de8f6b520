package gatewayapi

import (
	"cmp"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"

	"github.com/portcullis/portcullis/controlplane/internal/objects"
)

// SupportedFeatures are the Gateway API features this control plane
// implements, the one list a GatewayClass's status.supportedFeatures shows
// (sorted, as the API asks). Not the HTTPRouteRetry features: rules' retry
// is implemented, but it is an experimental field, which the
// standard-channel CRDs the chart installs prune before it reaches us.
var SupportedFeatures = sortedFeatures(
	features.SupportGateway,
	features.SupportGatewayAddressEmpty,
	features.SupportGatewayPort8080,
	features.SupportGatewayHTTPListenerIsolation,
	features.SupportReferenceGrant,
	features.SupportHTTPRoute,
	features.SupportHTTPRouteQueryParamMatching,
	features.SupportHTTPRouteMethodMatching,
	features.SupportHTTPRouteResponseHeaderModification,
	features.SupportHTTPRouteBackendRequestHeaderModification,
	features.SupportHTTPRoutePortRedirect,
	features.SupportHTTPRouteSchemeRedirect,
	features.SupportHTTPRoutePathRedirect,
	features.SupportHTTPRouteHostRewrite,
	features.SupportHTTPRoutePathRewrite,
	features.SupportHTTPRouteRequestMirror,
	features.SupportHTTPRouteRequestMultipleMirrors,
	features.SupportHTTPRouteRequestPercentageMirror,
	features.SupportHTTPRouteRequestTimeout,
	features.SupportHTTPRouteBackendTimeout,
	features.SupportHTTPRouteParentRefPort,
	features.SupportHTTPRouteBackendProtocolH2C,
	features.SupportHTTPRouteNamedRouteRule,
	features.SupportHTTPRouteDestinationPortMatching,
	features.SupportHTTPRoute303RedirectStatusCode,
	features.SupportHTTPRoute307RedirectStatusCode,
	features.SupportHTTPRoute308RedirectStatusCode,
	features.SupportHTTPRouteCORS,
	features.SupportHTTPRouteBackendProtocolWebSocket,
	features.SupportGRPCRoute,
	features.SupportGRPCRouteNamedRouteRule,
	features.SupportBackendTLSPolicy,
	features.SupportBackendTLSPolicySANValidation,
	features.SupportGatewayHTTPSListenerDetectMisdirectedRequests,
	features.SupportGatewayFrontendClientCertificateValidation,
	features.SupportGatewayFrontendClientCertificateValidationInsecureFallback,
	features.SupportGatewayBackendClientCertificate,
	features.SupportTLSRoute,
	features.SupportTLSRouteModeTerminate,
	features.SupportTLSRouteModeMixed,
	features.SupportTCPRoute,
	features.SupportUDPRoute,
	features.SupportListenerSet,
)

// ExperimentalFeatures are the features whose fields only the Gateway
// API's experimental-channel CRDs have: claimed only with the
// configuration's gateway.experimentalChannel, since the standard CRDs
// prune the fields and every test of them would fail.
var ExperimentalFeatures = sortedFeatures(
	features.SupportHTTPRouteRetry,
	features.SupportHTTPRouteRetryBackendTimeout,
	features.SupportHTTPRouteRetryConnectionError,
)

// Features are the features a GatewayClass of ours claims: with the
// experimental channel's CRDs, ExperimentalFeatures too.
func Features(experimental bool) []gwapiv1.SupportedFeature {
	if !experimental || len(ExperimentalFeatures) == 0 {
		return SupportedFeatures
	}
	out := slices.Concat(SupportedFeatures, ExperimentalFeatures)
	slices.SortFunc(out, func(a, b gwapiv1.SupportedFeature) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

func sortedFeatures(names ...features.FeatureName) []gwapiv1.SupportedFeature {
	out := make([]gwapiv1.SupportedFeature, len(names))
	for i, n := range names {
		out[i] = gwapiv1.SupportedFeature{Name: gwapiv1.FeatureName(n)}
	}
	slices.SortFunc(out, func(a, b gwapiv1.SupportedFeature) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// buildClasses finds our GatewayClasses (spec.controllerName is ours) and
// gives each its status. A class with parametersRef is not accepted:
// portcullis has no parameters to read, and ignoring them could serve
// its Gateways differently from what they ask. Other controllers'
// classes get nothing from us.
func (g *gatewayStage) buildClasses() {
	g.classes = map[string]bool{}
	for _, c := range g.R.Snap.In.GatewayClasses {
		if string(c.Spec.ControllerName) != g.controller {
			continue
		}
		st, complaints := g.gatewayAPIStatus(objects.KindGatewayClass, "", c.Name, c.Generation)
		problems := decodeFindings(complaints)
		if c.Spec.ParametersRef != nil {
			problems.add(string(gwapiv1.GatewayClassReasonInvalidParameters), "spec.parametersRef is not supported: this controller takes no parameters")
		}
		g.classes[c.Name] = len(problems) == 0
		st.GatewayAPI.Conditions = []metav1.Condition{goodWhenEmpty(gwapiv1.GatewayClassConditionStatusAccepted, problems, gwapiv1.GatewayClassReasonAccepted, "accepted by "+g.controller, c.Generation)}
		st.GatewayAPI.SupportedFeatures = Features(g.R.Snap.Opts.GatewayExperimentalChannel)
	}
}

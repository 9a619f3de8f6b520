package translator

import (
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// forwardClientCert has the HCM of a TLS host with
// clientValidation.forwardClientCertificate send the upstream an
// x-forwarded-client-cert header of its own (SANITIZE_SET, as Contour: a
// client's header is never passed on, so it cannot claim a certificate it
// did not present) with the selected parts of the client certificate.
// Without it the HCM keeps Envoy's default, SANITIZE: the header is
// dropped.
func forwardClientCert(hcm *hcmv3.HttpConnectionManager, f *ir.ForwardClientCert) {
	if f == nil {
		return
	}
	hcm.ForwardClientCertDetails = hcmv3.HttpConnectionManager_SANITIZE_SET
	hcm.SetCurrentClientCertDetails = &hcmv3.HttpConnectionManager_SetCurrentClientCertDetails{
		Cert:  f.Cert,
		Chain: f.Chain,
		Dns:   f.DNS,
		Uri:   f.URI,
	}
	if f.Subject {
		hcm.SetCurrentClientCertDetails.Subject = wrapperspb.Bool(true)
	}
}

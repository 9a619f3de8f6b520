package translator

import (
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	reqwithoutqueryv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/formatter/req_without_query/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// The access log's fields, in order: the name of each in the JSON format
// and its Envoy command. docs/tracing.md documents them (and
// TestAccessLogFormatIsDocumented holds it to this list). The path has no
// query: queries carry sign-in codes and tokens. authz, reason and user
// are the dynamic metadata the authorization servers return on every
// check (authserver/internal/check/decision.go); "-" when no server
// answered (see response_code_details: ext_authz_error, ...).
var accessLogFields = []struct{ name, command string }{
	{"start_time", "%START_TIME%"},
	{"method", "%REQ(:METHOD)%"},
	{"path", "%REQ_WITHOUT_QUERY(X-ENVOY-ORIGINAL-PATH?:PATH)%"},
	{"protocol", "%PROTOCOL%"},
	{"response_code", "%RESPONSE_CODE%"},
	{"response_flags", "%RESPONSE_FLAGS%"},
	{"response_code_details", "%RESPONSE_CODE_DETAILS%"},
	{"bytes_received", "%BYTES_RECEIVED%"},
	{"bytes_sent", "%BYTES_SENT%"},
	{"duration", "%DURATION%"},
	{"authority", "%REQ(:AUTHORITY)%"},
	{"upstream_host", "%UPSTREAM_HOST%"},
	{"user_agent", "%REQ(USER-AGENT)%"},
	{"request_id", "%REQ(X-REQUEST-ID)%"},
	{"trace_id", "%TRACE_ID%"},
	{"authz", "%DYNAMIC_METADATA(" + ExtAuthzFilterName + ":decision)%"},
	{"authz_reason", "%DYNAMIC_METADATA(" + ExtAuthzFilterName + ":reason)%"},
	{"user", "%DYNAMIC_METADATA(" + ExtAuthzFilterName + ":user)%"},
}

// AccessLogTextFormat is the text format: Envoy's default layout with the
// fields after the request ID as key=value.
const AccessLogTextFormat = `[%START_TIME%] "%REQ(:METHOD)% %REQ_WITHOUT_QUERY(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" ` +
	`%RESPONSE_CODE% %RESPONSE_FLAGS% %RESPONSE_CODE_DETAILS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION% ` +
	`"%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%" "%REQ(USER-AGENT)%" "%REQ(X-REQUEST-ID)%" ` +
	`trace_id=%TRACE_ID% authz=%DYNAMIC_METADATA(envoy.filters.http.ext_authz:decision)% ` +
	`authz_reason=%DYNAMIC_METADATA(envoy.filters.http.ext_authz:reason)% user="%DYNAMIC_METADATA(envoy.filters.http.ext_authz:user)%"` + "\n"

// accessLogs are an HCM's access logs: one to standard output, or none.
func accessLogs(a *ir.AccessLog) []*accesslogv3.AccessLog {
	if a == nil {
		return nil
	}
	format := &corev3.SubstitutionFormatString{
		Formatters: []*corev3.TypedExtensionConfig{{
			Name:        "envoy.formatter.req_without_query",
			TypedConfig: mustAny(&reqwithoutqueryv3.ReqWithoutQuery{}),
		}},
	}
	if a.JSON {
		fields := make(map[string]*structpb.Value, len(accessLogFields))
		for _, f := range accessLogFields {
			fields[f.name] = structpb.NewStringValue(f.command)
		}
		format.Format = &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: &structpb.Struct{Fields: fields}}
	} else {
		format.Format = &corev3.SubstitutionFormatString_TextFormatSource{TextFormatSource: &corev3.DataSource{
			Specifier: &corev3.DataSource_InlineString{InlineString: AccessLogTextFormat},
		}}
	}
	return []*accesslogv3.AccessLog{{
		Name: "envoy.access_loggers.stdout",
		ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: mustAny(&streamv3.StdoutAccessLog{
			AccessLogFormat: &streamv3.StdoutAccessLog_LogFormat{LogFormat: format},
		})},
	}}
}

#!/usr/bin/env bash
# make demo: the standalone stack on examples/quickstart and
# examples/gateway-api/basic — the control plane (file provider), a real Envoy,
# the auth server and an echo upstream, all on 127.0.0.1. Sends a few
# requests, prints each with its result, then keeps serving until Ctrl-C (or
# exits at once with DEMO_ONESHOT=1).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BIN="$ROOT/bin"
RUN="$ROOT/.tools/demo"
ENVOY="$ROOT/.tools/bin/envoy"
mkdir -p "$BIN" "$RUN"

# Ports (all on 127.0.0.1).
HTTP=18080 HTTPS=18443 XDS=18001 ADMIN=18002 ENVOY_ADMIN=19901 ECHO=19000 AUTH=19443 AUTH_METRICS=19090

[ -x "$ENVOY" ] || { echo "Envoy not found at $ENVOY: run 'make tools'" >&2; exit 1; }
for p in $HTTP $HTTPS $XDS $ADMIN $ENVOY_ADMIN $ECHO $AUTH $AUTH_METRICS; do
	if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
		echo "port $p on 127.0.0.1 is in use: stop whatever holds it (another 'make demo'?)" >&2
		exit 1
	fi
done

echo "==> building portcullis, authserver, echoserver"
go build -o "$BIN/portcullis" ./controlplane/cmd/portcullis
go build -o "$BIN/authserver" ./authserver/cmd/authserver
go build -o "$BIN/echoserver" ./e2e/cmd/echoserver

# The Gateway API example, with its listener's port 80 set to the demo's HTTP
# port: Gateway listeners join the shared HTTP listener of their Envoy port
# (80 would be 8080, the default one).
GATEWAY="$RUN/gateway-api"
rm -rf "$GATEWAY" && mkdir -p "$GATEWAY"
cp examples/gateway-api/basic/*.yaml "$GATEWAY/"
sed -i "s/^    port: 80\$/    port: $HTTP/" "$GATEWAY/gateway.yaml"
grep -q "^    port: $HTTP\$" "$GATEWAY/gateway.yaml" || { echo "could not set the port of $GATEWAY/gateway.yaml" >&2; exit 1; }

pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start() { # name command...
	local name=$1
	shift
	"$@" >"$RUN/$name.log" 2>&1 &
	pids+=($!)
}

echo "==> starting the echo upstream, the auth server, the control plane and Envoy (logs in .tools/demo/)"
start echoserver "$BIN/echoserver" --address "127.0.0.1:$ECHO"
start authserver "$BIN/authserver" testserver --address "127.0.0.1:$AUTH" --metrics-address "127.0.0.1:$AUTH_METRICS"
start portcullis "$BIN/portcullis" serve -f examples/quickstart -f "$GATEWAY" \
	--xds-address "127.0.0.1:$XDS" --admin-address "127.0.0.1:$ADMIN" \
	--envoy-http-address "127.0.0.1:$HTTP" --envoy-https-address "127.0.0.1:$HTTPS" --https-redirect-port "$HTTPS"
"$BIN/portcullis" bootstrap --xds-address "127.0.0.1:$XDS" --envoy-admin-address "127.0.0.1:$ENVOY_ADMIN" -o "$RUN/envoy.json"
start envoy "$ENVOY" -c "$RUN/envoy.json" --disable-hot-restart --log-level warn

CURL=(curl -sS --max-time 5 --cacert examples/quickstart/ca.crt
	--resolve "echo.example.com:$HTTPS:127.0.0.1" --resolve "echo.example.com:$HTTP:127.0.0.1"
	--resolve "gateway.example.com:$HTTP:127.0.0.1")

# Wait until Envoy serves the public route (configuration arrived over xDS).
for i in $(seq 1 100); do
	if [ "$("${CURL[@]}" -o /dev/null -w '%{http_code}' "https://echo.example.com:$HTTPS/public" 2>/dev/null)" = 200 ]; then
		break
	fi
	if [ "$i" = 100 ]; then
		echo "the stack did not become ready in 20s; logs:" >&2
		tail -n 20 "$RUN"/*.log >&2
		exit 1
	fi
	sleep 0.2
done

failures=0
# show DESCRIPTION EXPECTED-STATUS URL: sends a request, prints what came back.
show() {
	local what=$1 want=$2 url=$3
	local code
	code=$("${CURL[@]}" -D "$RUN/headers" -o "$RUN/body" -w '%{http_code}' "$url")
	printf '\n--- %s\n    GET %s -> %s' "$what" "$url" "$code"
	if [ "$code" = "$want" ]; then printf ' (as expected)\n'; else printf ' (EXPECTED %s)\n' "$want"; failures=$((failures + 1)); fi
	grep -i '^location:' "$RUN/headers" | sed 's/^/    /' || true
	# What the upstream saw: the Auth-* headers the auth server added.
	if grep -q '"headers"' "$RUN/body" 2>/dev/null; then
		python3 - "$RUN/body" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
auth = {k: v for k, v in r["headers"].items() if k.lower().startswith("auth-")}
route = {k: v for k, v in r["headers"].items() if k.lower() == "x-route"}
print("    upstream saw path %s, auth headers: %s%s" % (r["path"], json.dumps(auth) if auth else "none",
    ", set by the route: %s" % json.dumps(route) if route else ""))
PY
	else
		printf '    body: %s\n' "$(head -c 200 "$RUN/body")"
	fi
}

echo
echo "==> the stack is up; example requests:"
show "a protected route: checked by the auth server, which adds Auth-* headers" 200 "https://echo.example.com:$HTTPS/hello"
show "a route with authPolicy.disabled: the auth server is never called" 200 "https://echo.example.com:$HTTPS/public/page"
show "a route whose context tells the testserver to deny" 403 "https://echo.example.com:$HTTPS/deny"
show "plain HTTP to a TLS virtual host: redirected to HTTPS" 301 "http://echo.example.com:$HTTP/hello"
if ! grep -qi "^location: https://echo.example.com:$HTTPS/hello" "$RUN/headers"; then
	echo "    (EXPECTED the redirect to https://echo.example.com:$HTTPS/hello, the HTTPS listener)"
	failures=$((failures + 1))
fi
show "the Gateway API: an HTTPRoute of examples/gateway-api/basic on the shared HTTP listener, which sets X-Route" 200 "http://gateway.example.com:$HTTP/api/hello"
if ! grep -q 'gateway-api-example' "$RUN/body"; then
	echo "    (EXPECTED the upstream to see X-Route: gateway-api-example, set by the HTTPRoute)"
	failures=$((failures + 1))
fi

echo
echo "==> status of the resources (GET http://127.0.0.1:$ADMIN/status):"
curl -sS "http://127.0.0.1:$ADMIN/status" | python3 -c '
import json, sys
d = json.load(sys.stdin)
for o in d["objects"]:
    st = o.get("status") or {}
    # HTTPProxies and ExtensionServices: Valid; the Gateway API kinds:
    # Accepted (a route has it per parent Gateway).
    conds = st.get("conditions") or [c for p in st.get("parents") or [] for c in p.get("conditions") or []]
    kind = "Valid" if any(c["type"] == "Valid" for c in conds) else "Accepted"
    c = [c for c in conds if c["type"] == kind][0]
    name = "%s/%s" % (o["namespace"], o["name"]) if o.get("namespace") else o["name"]
    print("    %s %s: %s=%s (%s)" % (o["kind"], name, kind, c["status"], c["message"]))
print("    Envoy acknowledged: %s" % ", ".join(sorted(t.rsplit(".", 1)[-1] for t in d["envoy"]["acked"])))
'

if [ "$failures" -gt 0 ]; then
	echo "demo: $failures request(s) did not give the expected result; logs in .tools/demo/" >&2
	exit 1
fi
if [ "${DEMO_ONESHOT:-}" = 1 ]; then
	echo
	echo "demo: all requests gave the expected results (DEMO_ONESHOT=1: stopping)"
	exit 0
fi
cat <<EOF

==> try it yourself (Ctrl-C to stop):
    curl --cacert examples/quickstart/ca.crt --resolve echo.example.com:$HTTPS:127.0.0.1 https://echo.example.com:$HTTPS/hello
    curl --cacert examples/quickstart/ca.crt --resolve echo.example.com:$HTTPS:127.0.0.1 https://echo.example.com:$HTTPS/deny
    curl --resolve gateway.example.com:$HTTP:127.0.0.1 http://gateway.example.com:$HTTP/api/hello   # the Gateway API example
    curl http://127.0.0.1:$ADMIN/status              # status of every resource
    $BIN/portcullis translate -f examples/quickstart   # the same pipeline, offline
    Edit examples/quickstart/*.yaml or $GATEWAY/*.yaml: changes reach Envoy within a second.
EOF
wait

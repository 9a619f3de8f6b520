# One image with the three binaries (portcullis, authserver, extprocserver),
# as the Helm chart in charts/portcullis expects:
#   docker build -t ghcr.io/portcullis/portcullis:0.1.0 .
FROM golang:1.26 AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/root/.cache/go-build \
    --mount=type=cache,target=/go/pkg/mod \
    CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/portcullis ./controlplane/cmd/portcullis && \
    CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/authserver ./authserver/cmd/authserver && \
    CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o /out/extprocserver ./extprocserver/cmd/extprocserver

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["portcullis"]

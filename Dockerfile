# One image with the three binaries (portcullis, authserver, extprocserver),
# as the Helm chart in charts/portcullis expects:
#   docker build -t ghcr.io/portcullis/portcullis:0.1.0 .
FROM golang:1.26 AS build
WORKDIR /src
COPY . .
# --version of the binaries: docker build --build-arg VERSION=v0.2.0 --build-arg COMMIT=$(git rev-parse --short=12 HEAD)
ARG VERSION=dev
ARG COMMIT=unknown
RUN --mount=type=cache,target=/root/.cache/go-build \
    --mount=type=cache,target=/go/pkg/mod \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/portcullis/portcullis/serverkit/version.Version=${VERSION} -X github.com/portcullis/portcullis/serverkit/version.Commit=${COMMIT}" -o /out/portcullis ./controlplane/cmd/portcullis && \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/portcullis/portcullis/serverkit/version.Version=${VERSION} -X github.com/portcullis/portcullis/serverkit/version.Commit=${COMMIT}" -o /out/authserver ./authserver/cmd/authserver && \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X github.com/portcullis/portcullis/serverkit/version.Version=${VERSION} -X github.com/portcullis/portcullis/serverkit/version.Commit=${COMMIT}" -o /out/extprocserver ./extprocserver/cmd/extprocserver

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["portcullis"]

# syntax=docker/dockerfile:1
#
# docker build --build-arg VERSION=v0.1.0 -t ghcr.io/driftback/driftback:v0.1.0 .
#
# Multi-platform: docker buildx build --platform linux/amd64,linux/arm64 ...
# The builder runs on the build machine's platform and cross-compiles.

FROM --platform=$BUILDPLATFORM golang:1.26.8 AS build
WORKDIR /src

# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

COPY . .
ARG VERSION=dev
ARG TARGETOS
ARG TARGETARCH
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION}" \
      -o /out/driftback .

# Static binary, no shell, no package manager; CA certificates and
# /etc/passwd with the nonroot user (65532) are included.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/driftback /driftback
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/driftback"]

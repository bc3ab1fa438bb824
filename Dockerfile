# Container image of the gateway, built from source:
#   docker build -t switchboard .
#   docker run -p 18789:18789 -v switchboard:/state switchboard
# The image holds only the static binary (no shell, no libc). State lives in
# the /state volume; the gateway binds all interfaces inside the container,
# so a token is required (generated into /state/gateway.token on first start).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=0.0.0-dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X github.com/switchboardhq/switchboard/internal/cli.Version=${VERSION} -X github.com/switchboardhq/switchboard/internal/cli.Commit=${COMMIT}" \
      -o /out/switchboard ./cmd/switchboard

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/switchboard /usr/local/bin/switchboard
ENV SWITCHBOARD_STATE_DIR=/state
VOLUME /state
EXPOSE 18789
ENTRYPOINT ["/usr/local/bin/switchboard"]
CMD ["serve", "--bind", "lan"]

// Package extprocserver will hold Portcullis's Envoy external processing
// server (envoy.service.ext_proc.v3.ExternalProcessor/Process), its Go SDK
// and built-in processors. It arrives with its own issue and will reuse the
// serverkit module for TLS, health, metrics and shutdown.
package extprocserver

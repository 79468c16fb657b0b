//go:build tools

// The h2spec conformance suite (github.com/summerwind/h2spec), pinned by this module's go.mod and go.sum: the
// test (test/fanout/h2/h2spec.test.ts) builds it with `go build github.com/summerwind/h2spec/cmd/h2spec` here.
// This file only makes `go mod tidy` keep the requirement; it is never compiled.
package tools

import _ "github.com/summerwind/h2spec/cmd/h2spec"

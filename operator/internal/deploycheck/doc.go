// Package deploycheck holds tests that apply the committed config/ manifests to a real API server:
// the operator Deployment under the restricted Pod Security Standard, and the samples under the CRD's
// validation. It has no non-test code.
package deploycheck

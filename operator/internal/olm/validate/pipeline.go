package validate

import (
	"fmt"
	"net/mail"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
)

// pipelineChecks are the CSV fields OperatorHub's submission pipeline requires beyond what the library
// validators of this version report as errors: a readable display name and description, an icon,
// maintainers with valid email addresses, a provider and links.
func pipelineChecks(csv *operatorsv1alpha1.ClusterServiceVersion) []Finding {
	var out []Finding
	fail := func(format string, a ...any) {
		out = append(out, Finding{Error: true, Manifest: csv.Name, Text: fmt.Sprintf(format, a...)})
	}
	s := csv.Spec
	if n := len(s.DisplayName); n < 3 || n > 50 {
		fail("spec.displayName %q must be 3 to 50 characters", s.DisplayName)
	}
	if len(s.Description) < 20 {
		fail("spec.description must be a usage guide of at least 20 characters")
	}
	if len(s.Icon) == 0 || s.Icon[0].Data == "" || s.Icon[0].MediaType == "" {
		fail("spec.icon is missing; add base64data and mediatype (the generator reads config/manifests/bases/icon.svg)")
	}
	if len(s.Maintainers) == 0 {
		fail("spec.maintainers is empty; list at least one with name and email")
	}
	for i, m := range s.Maintainers {
		if _, err := mail.ParseAddress(m.Email); m.Name == "" || err != nil {
			fail("spec.maintainers[%d] needs a name and a valid email, got %q <%s>", i, m.Name, m.Email)
		}
	}
	if s.Provider.Name == "" {
		fail("spec.provider.name is empty; name who provides the operator")
	}
	if len(s.Links) == 0 {
		fail("spec.links is empty; link at least the source code and documentation")
	}
	return out
}

// Package validate checks a generated bundle the way OperatorHub's pipeline does: operator-framework's
// default bundle validators plus OperatorHub, capability, category, good-practice and deprecated-API
// checks for every Kubernetes minor from the CSV's minKubeVersion to the newest, and operator-registry's
// bundle format check.
package validate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/operator-framework/api/pkg/manifests"
	"github.com/operator-framework/api/pkg/validation"
	valerrors "github.com/operator-framework/api/pkg/validation/errors"
	registrybundle "github.com/operator-framework/operator-registry/pkg/lib/bundle"
	"github.com/sirupsen/logrus"
)

// NewestKubeMinor is the newest Kubernetes minor the bundle is checked against: the version the project
// builds and tests with.
const NewestKubeMinor = 35

// Finding is one error or warning.
type Finding struct {
	Error    bool
	Manifest string
	Text     string
	// Kube lists the Kubernetes minors the finding was reported for.
	Kube []string
}

func (f Finding) String() string {
	level := "warning"
	if f.Error {
		level = "ERROR"
	}
	where := ""
	if n := len(f.Kube); n > 0 && n < len(allMinors) {
		where = fmt.Sprintf(" (Kubernetes %s)", strings.Join(f.Kube, ", "))
	} else if n > 0 {
		where = fmt.Sprintf(" (Kubernetes %s to %s)", f.Kube[0], f.Kube[n-1])
	}
	return fmt.Sprintf("%s: %s: %s%s", level, f.Manifest, f.Text, where)
}

// allMinors are the minors of the last validation, for printing ranges.
var allMinors []string

// Report is every finding, errors first, without duplicates.
type Report []Finding

// Err is nil when the report has no errors.
func (r Report) Err() error {
	n := 0
	for _, f := range r {
		if f.Error {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("the bundle has %d validation error(s)", n)
}

// Bundle validates the bundle directory at dir.
func Bundle(dir string) (Report, error) {
	b, err := manifests.GetBundleFromDir(dir)
	if err != nil {
		return nil, fmt.Errorf("load bundle %s: %w", dir, err)
	}
	if b.CSV == nil {
		return nil, fmt.Errorf("bundle %s has no ClusterServiceVersion in manifests/", dir)
	}
	minors, err := kubeMinors(b.CSV.Spec.MinKubeVersion)
	if err != nil {
		return nil, err
	}
	validators := validation.DefaultBundleValidators.WithValidators(
		validation.OperatorHubV2Validator, validation.StandardCapabilitiesValidator,
		validation.StandardCategoriesValidator, validation.GoodPracticesValidator,
		validation.AlphaDeprecatedAPIsValidator)
	allMinors = minors
	var report Report
	for _, minor := range minors {
		objs := append(b.ObjectsToValidate(), map[string]string{"k8s-version": minor})
		for _, res := range validators.Validate(objs...) {
			report = report.add(res, minor)
		}
	}
	report = append(report, pipelineChecks(b.CSV)...)
	if err := registrybundle.NewImageValidator(nil, logrus.NewEntry(quietLogger())).ValidateBundleFormat(dir); err != nil {
		report = append(report, Finding{Error: true, Manifest: "bundle format", Text: err.Error()})
	}
	slices.SortStableFunc(report, func(a, b Finding) int {
		if a.Error != b.Error {
			if a.Error {
				return -1
			}
			return 1
		}
		return 0
	})
	return report, nil
}

func (r Report) add(res valerrors.ManifestResult, minor string) Report {
	add := func(isErr bool, e valerrors.Error) {
		f := Finding{Error: isErr, Manifest: res.Name, Text: e.Error()}
		i := slices.IndexFunc(r, func(x Finding) bool { return x.Error == f.Error && x.Manifest == f.Manifest && x.Text == f.Text })
		if i < 0 {
			r = append(r, f)
			i = len(r) - 1
		}
		r[i].Kube = append(r[i].Kube, minor)
	}
	for _, e := range res.Errors {
		add(true, e)
	}
	for _, w := range res.Warnings {
		add(false, w)
	}
	return r
}

// kubeMinors lists "1.N" from the CSV's minKubeVersion to NewestKubeMinor.
func kubeMinors(minKube string) ([]string, error) {
	if minKube == "" {
		return nil, fmt.Errorf("the CSV has no spec.minKubeVersion; set it in config/manifests/bases, e.g. 1.30.0")
	}
	v, err := semver.ParseTolerant(minKube)
	if err != nil {
		return nil, fmt.Errorf("spec.minKubeVersion %q is not a version such as 1.30.0: %w", minKube, err)
	}
	if v.Major != 1 || v.Minor > NewestKubeMinor {
		return nil, fmt.Errorf("spec.minKubeVersion %q must be a Kubernetes 1.x no newer than 1.%d", minKube, NewestKubeMinor)
	}
	var out []string
	for m := v.Minor; m <= NewestKubeMinor; m++ {
		out = append(out, fmt.Sprintf("1.%d", m))
	}
	return out, nil
}

func quietLogger() *logrus.Logger {
	l := logrus.New()
	l.SetLevel(logrus.ErrorLevel)
	return l
}

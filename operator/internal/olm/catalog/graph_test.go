package catalog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// fbc builds a one-package catalog whose stable channel has the given entries; every entry name (and
// any extra bundle named) gets an olm.bundle.
func fbc(entries []declcfg.ChannelEntry, extraBundles ...string) *declcfg.DeclarativeConfig {
	cfg := &declcfg.DeclarativeConfig{
		Packages: []declcfg.Package{{Schema: declcfg.SchemaPackage, Name: "p", DefaultChannel: "stable"}},
		Channels: []declcfg.Channel{{Schema: declcfg.SchemaChannel, Package: "p", Name: "stable", Entries: entries}},
	}
	names := extraBundles
	for _, e := range entries {
		names = append(names, e.Name)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		version := strings.TrimPrefix(n, "p.v")
		pkgProp, _ := json.Marshal(property.Package{PackageName: "p", Version: version})
		cfg.Bundles = append(cfg.Bundles, declcfg.Bundle{Schema: declcfg.SchemaBundle, Package: "p", Name: n, Image: "example.com/p-bundle:v" + version,
			Properties: []property.Property{{Type: property.TypePackage, Value: pkgProp}}})
	}
	return cfg
}

func entry(name, replaces string) declcfg.ChannelEntry {
	return declcfg.ChannelEntry{Name: name, Replaces: replaces}
}

func TestCheckGraph(t *testing.T) {
	tests := []struct {
		name       string
		cfg        *declcfg.DeclarativeConfig
		want       []string // substrings of the error; nil means valid
		modelFails bool     // operator-registry's model rejects it too
	}{
		{name: "one chain", cfg: fbc([]declcfg.ChannelEntry{entry("p.v1.0.0", ""), entry("p.v1.1.0", "p.v1.0.0"), entry("p.v1.2.0", "p.v1.1.0")})},
		{name: "skipped release is not stranded", cfg: fbc([]declcfg.ChannelEntry{entry("p.v1.0.0", ""), entry("p.v1.1.0", "p.v1.0.0"),
			{Name: "p.v1.2.0", Replaces: "p.v1.0.0", Skips: []string{"p.v1.1.0"}}})},
		{name: "two heads", cfg: fbc([]declcfg.ChannelEntry{entry("p.v1.0.0", ""), entry("p.v1.1.0", "p.v1.0.0"), entry("p.v1.2.0", "p.v1.0.0")}),
			want: []string{"channel stable: 2 heads (p.v1.1.0, p.v1.2.0)", "make the newer one replace the older"}, modelFails: true},
		// The classic pitfall: v1.2.0 skips v1.1.0, v1.1.0 replaces v1.0.0, and v1.0.0 users have no way up.
		{name: "stranded bundle", cfg: fbc([]declcfg.ChannelEntry{entry("p.v1.0.0", ""), entry("p.v1.1.0", "p.v1.0.0"), {Name: "p.v1.2.0", Skips: []string{"p.v1.1.0"}}}),
			want: []string{"p.v1.0.0 is stranded", "head p.v1.2.0", "make the release after it replace it"}, modelFails: true},
		{name: "replaces an unknown bundle", cfg: fbc([]declcfg.ChannelEntry{entry("p.v1.0.0", ""), entry("p.v1.1.0", "p.v1.0.5")}),
			want: []string{"p.v1.1.0 replaces p.v1.0.5, which is not in the channel", "add p.v1.0.5 to the channel"}},
		{name: "cycle", cfg: fbc([]declcfg.ChannelEntry{entry("p.v1.0.0", "p.v1.1.0"), entry("p.v1.1.0", "p.v1.0.0")}),
			want: []string{"no head", "cycle"}, modelFails: true},
		{name: "cycle below the head", cfg: fbc([]declcfg.ChannelEntry{entry("p.v1.0.0", "p.v1.1.0"), entry("p.v1.1.0", "p.v1.0.0"), entry("p.v1.2.0", "p.v1.1.0")}),
			want: []string{"the replaces chain loops: p.v1.2.0 -> p.v1.1.0 -> p.v1.0.0 -> p.v1.1.0", "remove the replaces that points back"}, modelFails: true},
		{name: "entry without bundle", cfg: func() *declcfg.DeclarativeConfig {
			c := fbc([]declcfg.ChannelEntry{entry("p.v1.0.0", "")})
			c.Channels[0].Entries = append(c.Channels[0].Entries, entry("p.v1.1.0", "p.v1.0.0"))
			return c
		}(), want: []string{"entry p.v1.1.0 has no olm.bundle", "add the bundle (make release)"}, modelFails: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckGraph(tt.cfg)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("valid graph refused: %v", err)
				}
			} else {
				if err == nil {
					t.Fatal("bad graph accepted")
				}
				for _, w := range tt.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
			}
			m, merr := declcfg.ConvertToModel(*tt.cfg)
			if merr == nil {
				merr = m.Validate()
			}
			if tt.want == nil && merr != nil {
				t.Errorf("operator-registry rejects a graph we accept: %v", merr)
			}
			if tt.modelFails && merr == nil {
				t.Errorf("operator-registry accepts it; the case is mislabelled")
			}
		})
	}
}

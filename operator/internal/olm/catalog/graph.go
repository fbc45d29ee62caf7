// Package catalog generates the file-based catalog (catalog/) from the release record and the bundle,
// and validates any file-based catalog: its upgrade graph with messages that name the version and the
// fix, then operator-registry's own model validation (what `opm validate` runs).
package catalog

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
)

// CheckGraph checks every channel of every package: each entry names a bundle that exists, every
// replaces names an entry of the same channel, the channel has exactly one head, no cycle, and no
// stranded entry (one with no upgrade path to the head). All problems are reported at once.
func CheckGraph(cfg *declcfg.DeclarativeConfig) error {
	bundles := map[string]bool{}
	for _, b := range cfg.Bundles {
		bundles[b.Package+"/"+b.Name] = true
	}
	var errs []error
	for _, ch := range cfg.Channels {
		errs = append(errs, checkChannel(ch, bundles)...)
	}
	return errors.Join(errs...)
}

func checkChannel(ch declcfg.Channel, bundles map[string]bool) []error {
	where := fmt.Sprintf("package %s, channel %s", ch.Package, ch.Name)
	entries, errs := indexEntries(ch, bundles, where)
	if len(entries) == 0 {
		return append(errs, fmt.Errorf("%s: the channel has no entries; add a release to it or delete it", where))
	}
	replaced, skipped := map[string]bool{}, map[string]bool{}
	for _, e := range ch.Entries {
		for _, s := range e.Skips {
			skipped[s] = true
		}
		if e.Replaces == "" {
			continue
		}
		if _, ok := entries[e.Replaces]; !ok {
			errs = append(errs, fmt.Errorf("%s: %s replaces %s, which is not in the channel; add %s to the channel or make %s replace the release before it",
				where, e.Name, e.Replaces, e.Replaces, e.Name))
		}
		replaced[e.Replaces] = true
	}
	var heads []string
	for _, e := range ch.Entries {
		if !replaced[e.Name] && !skipped[e.Name] {
			heads = append(heads, e.Name)
		}
	}
	switch len(heads) {
	case 0:
		return append(errs, fmt.Errorf("%s: no head (every entry is replaced by another): the replaces form a cycle; the newest release must not be replaced by an older one", where))
	case 1:
		return append(errs, walkFromHead(heads[0], entries, skipped, where)...)
	}
	return append(errs, fmt.Errorf("%s: %d heads (%s) but a channel needs exactly one newest release; make the newer one replace the older (releases form one chain)",
		where, len(heads), strings.Join(heads, ", ")))
}

// indexEntries maps entry names to entries, reporting duplicates and entries without a bundle.
func indexEntries(ch declcfg.Channel, bundles map[string]bool, where string) (map[string]declcfg.ChannelEntry, []error) {
	var errs []error
	entries := map[string]declcfg.ChannelEntry{}
	for _, e := range ch.Entries {
		if _, dup := entries[e.Name]; dup {
			errs = append(errs, fmt.Errorf("%s: %s is listed twice; keep one entry", where, e.Name))
		}
		entries[e.Name] = e
		if !bundles[ch.Package+"/"+e.Name] {
			errs = append(errs, fmt.Errorf("%s: entry %s has no olm.bundle of that name; add the bundle (make release) or remove the entry", where, e.Name))
		}
	}
	return entries, errs
}

// walkFromHead follows replaces from the head: a repeat is a cycle, and whatever the walk misses (and no
// entry skips) is stranded.
func walkFromHead(head string, entries map[string]declcfg.ChannelEntry, skipped map[string]bool, where string) []error {
	reached := map[string]bool{}
	var path []string
	for cur := head; cur != ""; cur = entries[cur].Replaces {
		path = append(path, cur)
		if reached[cur] {
			return []error{fmt.Errorf("%s: the replaces chain loops: %s; remove the replaces that points back", where, strings.Join(path, " -> "))}
		}
		reached[cur] = true
		if _, ok := entries[cur]; !ok || skipped[entries[cur].Replaces] {
			break
		}
	}
	var stranded []string
	for name := range entries {
		if !reached[name] && !skipped[name] {
			stranded = append(stranded, name)
		}
	}
	slices.Sort(stranded)
	var errs []error
	for _, s := range stranded {
		errs = append(errs, fmt.Errorf("%s: %s is stranded: no upgrade path leads from it to the head %s; make the release after it replace it, or list it in that release's skips",
			where, s, head))
	}
	return errs
}

package strategies

import (
	"fmt"
	"sort"
	"strings"
)

// Spec is a parsed strategy spec: `torch`, `jax:mem_fraction=0.9`,
// `torch:expandable_segments=true,max_split_size_mb=128`. A literal
// PYTORCH_CUDA_ALLOC_CONF string (`torch:expandable_segments:True,
// max_split_size_mb:128`) is accepted too: inside a parameter ':' works like
// '=' as it does in that variable, and bracketed list values
// (`roundup_power2_divisions:[256:1,>:8]`) keep their commas.
type Spec struct {
	Name   string
	Params []KV // in the order given
}

// KV is one knob setting.
type KV struct{ Key, Value string }

// ParseSpec splits a spec into its name and knob settings. Knob names are
// checked by the framework package that owns them (Knobs.Check).
func ParseSpec(s string) (Spec, error) {
	s = strings.TrimSpace(s)
	name, rest, _ := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if name == "" {
		return Spec{}, fmt.Errorf("empty strategy spec")
	}
	sp := Spec{Name: name}
	for _, item := range SplitList(rest) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		i := strings.IndexAny(item, "=:")
		if i <= 0 {
			return Spec{}, fmt.Errorf("strategy %q: %q is not key=value", s, item)
		}
		sp.Params = append(sp.Params, KV{strings.TrimSpace(item[:i]), strings.TrimSpace(item[i+1:])})
	}
	return sp, nil
}

// Repeated reports the first knob the spec gives more than once. A
// replay refuses one: the later value would win while the result's label,
// the spec as written, names both.
func (s Spec) Repeated() (string, bool) {
	for i, p := range s.Params {
		for _, q := range s.Params[:i] {
			if q.Key == p.Key {
				return p.Key, true
			}
		}
	}
	return "", false
}

// SplitList splits at commas outside brackets, so that a list value
// such as roundup_power2_divisions=[256:1,>:4] stays whole.
func SplitList(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, c := range s {
		switch c {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// String is the canonical form used in result names: name, then the
// knobs in the order given, as key=value.
func (s Spec) String() string {
	if len(s.Params) == 0 {
		return s.Name
	}
	var b strings.Builder
	b.WriteString(s.Name)
	for i, p := range s.Params {
		if i == 0 {
			b.WriteByte(':')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(p.Key + "=" + p.Value)
	}
	return b.String()
}

// CheckKeys reports the first parameter whose key is not in valid (nor one
// of its aliases), listing the valid keys.
func (s Spec) CheckKeys(valid ...string) error {
	set := map[string]bool{}
	for _, v := range valid {
		set[v] = true
	}
	for _, p := range s.Params {
		if !set[p.Key] {
			vs := append([]string(nil), valid...)
			sort.Strings(vs)
			return fmt.Errorf("strategy %q: unknown key %q (valid keys: %s)", s.Name, p.Key, strings.Join(vs, ", "))
		}
	}
	return nil
}

package core

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/portcullis/portcullis/controlplane/internal/ir"
)

// PathRank orders path matches: exact, regex, prefix (HTTPProxy routes
// too, as Contour orders them).
func PathRank(k ir.PathMatchKind) int {
	switch k {
	case ir.PathExact:
		return 0
	case ir.PathRegex:
		return 1
	}
	return 2
}

// RegexValid checks a regular expression Envoy will run (RE2, which Go's
// regexp implements), and that Envoy takes it: one it refuses makes it
// reject the whole route configuration, every host of the listener with
// it (docs/gateway-api.md).
func RegexValid(re string) error {
	if err := NoControlBytes(re); err != nil {
		return fmt.Errorf("regular expression %w", err)
	}
	if _, err := regexp.Compile(re); err != nil {
		return fmt.Errorf("invalid regular expression: %v", err)
	}
	parsed, err := syntax.Parse(re, syntax.Perl)
	if err != nil {
		return fmt.Errorf("invalid regular expression: %v", err)
	}
	if n := regexProgramSize(parsed) + regexProgramOverhead; n > envoyRegexMaxProgramSize {
		return fmt.Errorf("regular expression %q is too large for Envoy: its RE2 program may have %d instructions, more than %d (write a shorter one, or several matches)", re, n, envoyRegexMaxProgramSize)
	}
	return nil
}

// regexProgramSize estimates from above the instructions of the RE2
// program of re, as Envoy counts them (RE2's compiler is not Go's: Go's
// program sizes are not RE2's). A byte of a literal or a range of a class
// is one instruction; a class's range beyond Latin-1 is counted as two per
// UTF-8 byte, which is more than RE2 takes; repetitions are copies, as RE2
// compiles them. The result saturates, so that nested repetitions cannot
// overflow it.
func regexProgramSize(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return literalProgramSize(re.Rune)
	case syntax.OpCharClass:
		return charClassProgramSize(re.Rune)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 2
	case syntax.OpCapture:
		return saturatingSum(2, subProgramSize(re))
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return saturatingSum(1, subProgramSize(re))
	case syntax.OpRepeat:
		return repeatProgramSize(re)
	case syntax.OpConcat:
		return subProgramSize(re)
	case syntax.OpAlternate:
		return saturatingSum(subProgramSize(re), len(re.Sub)-1)
	}
	// The empty-width assertions, an empty or impossible match.
	return 1
}

// saturatingSum is the sum of n, at most programSizeCeiling.
func saturatingSum(n ...int) int {
	t := 0
	for _, v := range n {
		t = min(t+v, programSizeCeiling)
	}
	return t
}

// saturatingTimes is n*k, at most programSizeCeiling.
func saturatingTimes(n, k int) int {
	if k > 0 && n > programSizeCeiling/k {
		return programSizeCeiling
	}
	return n * k
}

// subProgramSize is the size of re's subexpressions.
func subProgramSize(re *syntax.Regexp) int {
	t := 0
	for _, s := range re.Sub {
		t = saturatingSum(t, regexProgramSize(s))
	}
	return t
}

// literalProgramSize is a literal's size: one instruction per UTF-8 byte.
func literalProgramSize(runes []rune) int {
	n := 0
	for _, r := range runes {
		n += max(utf8.RuneLen(r), 1)
	}
	return n
}

// charClassProgramSize is a class's size (ranges, lo-hi pairs): one
// instruction per Latin-1 range, two per UTF-8 byte beyond.
func charClassProgramSize(ranges []rune) int {
	n := 0
	for i := 0; i+1 < len(ranges); i += 2 {
		lo, hi := ranges[i], ranges[i+1]
		switch {
		case hi < 0x100, lo < 0x100 && hi == unicode.MaxRune:
			n++
		default:
			n += 2 * max(utf8.RuneLen(hi), 1)
		}
	}
	return max(n, 1)
}

// repeatProgramSize is a repetition's size: x{n,} is n copies and a
// star; x{n,m} is m copies, m-n of them optional.
func repeatProgramSize(re *syntax.Regexp) int {
	sub := subProgramSize(re)
	if re.Max < 0 {
		return saturatingSum(saturatingTimes(sub, re.Min), sub, 1)
	}
	return saturatingSum(saturatingTimes(sub, re.Max), re.Max-re.Min)
}

// NoControlBytes refuses line breaks and NUL bytes in a value that reaches
// Envoy: it rejects them in names and paths, and with them the whole route
// configuration, which the HTTP listener's virtual hosts all share.
func NoControlBytes(v string) error {
	if strings.ContainsAny(v, "\r\n\x00") {
		return fmt.Errorf("%q contains a line break or a NUL byte", v)
	}
	return nil
}

// PathConditionValid refuses what Envoy rejects in a path match: besides
// line breaks and NUL bytes, "?" and "#" (a path never holds them; Envoy
// refuses them in a path-separated prefix, the whole route configuration
// with it); and a path not starting with "/". kind ("prefix" or "exact")
// names the condition in the error.
func PathConditionValid(kind, p string) error {
	if strings.ContainsAny(p, "?#") {
		return fmt.Errorf("%s %q contains \"?\" or \"#\": a path condition cannot match a query or a fragment", kind, p)
	}
	if err := NoControlBytes(p); err != nil {
		return fmt.Errorf("%s %v", kind, err)
	}
	if !strings.HasPrefix(p, "/") {
		return fmt.Errorf("%s conditions must start with /, %s was supplied", kind, p)
	}
	return nil
}

// envoyRegexMaxProgramSize is the largest RE2 program Envoy accepts (its
// runtime key re2.max_program_size.error_level, 100 by default);
// regexProgramOverhead the instructions every program has besides its
// expression's.
const (
	envoyRegexMaxProgramSize = 100
	regexProgramOverhead     = 4
)

// programSizeCeiling is where regexProgramSize saturates.
const programSizeCeiling = 1 << 20

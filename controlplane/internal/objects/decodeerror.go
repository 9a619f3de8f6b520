package objects

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The decoders' errors in the user's terms: a tab in the indentation says
// "tab" and where, and a value of the wrong type names the field path and
// the type expected instead of Go's struct and type names.

// yamlLine is the line a YAML parser error names, within its document.
var yamlLine = regexp.MustCompile(`yaml: line (\d+): `)

// typeError is encoding/json's (and sigs.k8s.io/json's) wording of a value
// of the wrong type: the JSON kind, the Go struct and field path, the Go type.
var typeError = regexp.MustCompile(`json: cannot unmarshal (\w+) into Go struct field \w+\.(\S+) of type (\S+)`)

// explain rewrites err, met decoding doc (the document where names), in the
// user's terms; other errors are returned as they are, prefixed by where.
func explain(err error, where string, doc []byte) error {
	msg := err.Error()
	// where is file:document-index: said in words, it is not read as a
	// second line number beside the document's own.
	if i := strings.LastIndexByte(where, ':'); i > 0 {
		where = where[:i] + ", document " + where[i+1:]
	}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		if l, ok := tabIndented(doc, line); ok {
			return fmt.Errorf("%s, line %d: a tab indents this line: YAML indents with spaces only", where, l)
		}
		return fmt.Errorf("%s, line %d: %s", where, line, strings.TrimPrefix(msg[strings.Index(msg, m[0])+len(m[0]):], "yaml: "))
	}
	if m := typeError.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s: %s: expected %s, got %s", where, m[2], expected(m[3]), article(m[1]))
	}
	return fmt.Errorf("%s: %w", where, err)
}

// tabIndented returns the first line with a tab in its indentation, from
// the line the parser named back to the document's start (the parser may
// name the line after it).
func tabIndented(doc []byte, named int) (int, bool) {
	lines := bytes.Split(doc, []byte("\n"))
	for l := min(named, len(lines)); l >= 1; l-- {
		indent := lines[l-1][:len(lines[l-1])-len(bytes.TrimLeft(lines[l-1], " \t"))]
		if bytes.IndexByte(indent, '\t') >= 0 {
			return l, true
		}
	}
	return 0, false
}

// expected names a Go type as the value a user writes.
func expected(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	case strings.HasPrefix(goType, "map["):
		return "a map"
	case strings.HasPrefix(goType, "int") || strings.HasPrefix(goType, "uint"):
		return "an integer"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case goType == "string":
		return "a string"
	case goType == "bool":
		return "true or false"
	case strings.Contains(goType, "."):
		// A struct, or a named type of the API (a duration, a mode):
		// the API reference says which.
		return "a map (" + goType[strings.LastIndex(goType, ".")+1:] + ")"
	}
	return goType
}

// article names a JSON kind as the value found.
func article(kind string) string {
	switch kind {
	case "array":
		return "a list"
	case "object":
		return "a map"
	case "number":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	}
	return kind
}

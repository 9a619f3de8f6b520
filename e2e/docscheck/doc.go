// Package docscheck holds TestDocsNameWhatExists, which keeps the docs true:
// every repository path, Go file and Go identifier of ours that the
// Markdown docs name must exist in the repository. It starts nothing and
// needs no tool; it reads the working tree.
package docscheck

module github.com/portcullis/portcullis/e2e

go 1.26.0

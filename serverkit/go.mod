module github.com/portcullis/portcullis/serverkit

go 1.26.0

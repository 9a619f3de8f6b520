module github.com/portcullis/portcullis/apis

go 1.26.0

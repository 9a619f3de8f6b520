module github.com/portcullis/portcullis/extprocserver

go 1.26.0

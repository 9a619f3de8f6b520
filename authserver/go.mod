module github.com/portcullis/portcullis/authserver

go 1.26.0

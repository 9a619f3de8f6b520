module github.com/portcullis/portcullis/controlplane

go 1.26.0

module github.com/typedkube/informer

go 1.26.0

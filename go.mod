module github.com/narma-rma/narma

go 1.25

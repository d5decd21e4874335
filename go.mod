module github.com/factline/factline

go 1.26.0

require (
	github.com/oklog/ulid/v2 v2.1.2
	github.com/vmihailenco/msgpack/v5 v5.4.1
)

require github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect

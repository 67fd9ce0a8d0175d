module chainerc.dev/bench/go_overhead

go 1.19

require chainerc.dev/chainerc v0.0.0

replace chainerc.dev/chainerc => ../../wrappers/go

module chainerc.dev/chainerc

go 1.19

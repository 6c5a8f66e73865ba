module loom

go 1.19

package gen_test

import (
	"fmt"
	"io"

	"membench/traces/gen"
)

func ExampleNew() {
	r, err := gen.New("transformer-train", 1, map[string]string{
		"model": "llama-7b", "batch": "8", "seq": "4096", "dtype": "bf16",
		"attention": "flash", "checkpointing": "full", "steps": "2",
	})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	fmt.Println(r.Meta().Get("description"))
	var allocs, marks int
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if ev.Op.String() == "alloc" {
			allocs++
		} else if ev.Op.String() == "mark" {
			marks++
		}
	}
	fmt.Println(allocs, "allocations,", marks, "marks; persistent bytes", r.Meta().Get("persistent-bytes"))
	// Output:
	// transformer training, llama model of 6738.4M parameters (layers 32, d_model 4096, heads 32, ffn 11008, vocab 32000; preset llama-7b); batch 8 × seq 4096, bf16, adam, flash attention, full activation checkpointing; 2 steps
	// 6912 allocations, 8 marks; persistent bytes 94337818624
}

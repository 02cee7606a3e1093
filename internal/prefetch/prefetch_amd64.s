#include "textflag.h"

// func line(addr uintptr)
TEXT ·line(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ addr+0(FP), AX
	PREFETCHT0 (AX)
	RET

// func lines(addr, n uintptr)
//
// One prefetch per 64 bytes from addr for n bytes, and one of the last
// byte: every line that [addr, addr+n) touches, for n > 0.
TEXT ·lines(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ addr+0(FP), AX
	MOVQ n+8(FP), CX
	LEAQ -1(AX)(CX*1), DX
loop:
	PREFETCHT0 (AX)
	ADDQ $64, AX
	CMPQ AX, DX
	JLS  loop
	PREFETCHT0 (DX)
	RET

// func lines9(addr uintptr)
//
// The nine lines from addr, a line's start, without a loop.
TEXT ·lines9(SB), NOSPLIT|NOFRAME, $0-8
	MOVQ addr+0(FP), AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	PREFETCHT0 192(AX)
	PREFETCHT0 256(AX)
	PREFETCHT0 320(AX)
	PREFETCHT0 384(AX)
	PREFETCHT0 448(AX)
	PREFETCHT0 512(AX)
	RET

package gen

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// llm-serve: LLM inference serving with a KV cache and continuous
// batching (Orca / vLLM style), one allocation per tensor an op produces.
// Inference runs without autograd, so every intermediate is freed as soon
// as its consumer has run.
//
// Requests. In each iteration of the serving loop a Poisson number of
// requests arrives (mean: arrival), each marked "request:N" (N counts from
// 0); when nothing is running or waiting, the server idles until the next
// arrival. Waiting requests are admitted in arrival order while fewer than
// max_batch run. A request's prompt and output lengths are uniform in
// [prompt_min, prompt_max] and [output_min, output_max]. Admitted requests
// are prefilled ("prefill"), which produces their first output token; the
// requests that were already running then decode one token each
// ("decode:N", N counting the decode steps from 0). A request that has
// produced its output tokens leaves at the end of the iteration, freeing
// its KV cache.
//
// Randomness: two PCG sources seeded from the seed, one for the arrivals
// and one for the lengths (drawn at admission, which is arrival order), so
// the trace is a function of the seed and the parameters.
//
// KV cache (kvtok = D·e bytes per token per layer for K, the same for V):
//
//   - concat (Hugging Face eager generate, and the recorded gpt-generate
//     trace): each request owns, per layer, a K and a V tensor of its
//     context length. Prefill allocates them (p·kvtok each); each decode
//     step concatenates the new token: it allocates (c+1)·kvtok and frees
//     the old c·kvtok tensor, for K then V, layer by layer. Attention is
//     eager, per request: scores H·t·c·e (t query tokens, c keys) through
//     matmul, scale, mask and softmax, each a new tensor, then the
//     request's output t·D·e. Prefill runs one request at a time.
//   - paged (vLLM): the cache is made of blocks of block_tokens tokens, one
//     allocation per block holding K and V of every layer, 2·L·
//     block_tokens·D·e bytes. Prefill allocates ⌈p/block_tokens⌉ blocks;
//     a decode step allocates a new block for a request whose cached
//     length is a multiple of block_tokens (the new token starts a block);
//     a finished request frees its blocks. Attention is a fused kernel that
//     reads and writes the blocks in place and allocates only its output
//     (N·D·e). All admitted requests are prefilled in one batch.
//
// A forward over N tokens (decode: one per running request; prefill: the
// prompt tokens) of n sequences allocates, with act = N·D·e:
//
//	ids (N·8, int64), the embedding (act; frees ids); gpt2 adds position
//	rows (act) into a new act; llama computes rotary cos and sin (N·hd·e
//	each, freed after the last layer)
//	per layer: norm (act), gpt2 qkv (N·3D·e) or llama q, k, v (act each)
//	and rotated q, k (act each, freeing q, k), attention (above) giving
//	merged (act), the output projection (act), the residual sum (act),
//	norm (act), the MLP (gpt2 N·F·e twice; llama gate, up, silu, product
//	N·F·e each), its down projection (act) and the residual sum (act)
//	the final norm (act), the last position of each sequence (n·D·e), the
//	logits (n·V·e), fp32 copies for sampling (n·V·4, when e < 4), the
//	probabilities (n·V·4), the sampled token ids (n·8)
//
// The weights (numel×e, parameter order) are allocated once at the start
// and persist.
var serveSpec = &kindSpec{
	kind: LLMServe,
	params: sortDocs(append(modelParamDocs("bf16"),
		ParamDoc{"arrival", "0.5", "mean number of requests arriving per iteration (Poisson), > 0"},
		ParamDoc{"block_tokens", "16", "paged: tokens per KV block"},
		ParamDoc{"kv", "paged", "concat (each step allocates K and V one token longer and frees the old ones) or paged (fixed-size blocks)"},
		ParamDoc{"max_batch", "16", "most requests running at once"},
		ParamDoc{"output_max", "256", "longest output, tokens"},
		ParamDoc{"output_min", "16", "shortest output, tokens (>= 1; the first comes from prefill)"},
		ParamDoc{"prompt_max", "512", "longest prompt, tokens"},
		ParamDoc{"prompt_min", "16", "shortest prompt, tokens"},
		ParamDoc{"requests", "64", "requests served"},
	)),
	build: buildServe,
}

// Stream constants of the two PCG sources (the seed is the other half).
const (
	pcgArrivals = 0x61727269_76616c73 // "arrivals"
	pcgLengths  = 0x6c656e67_74687321 // "lengths!"
)

type serveReq struct {
	num            int64
	prompt, output int64
	gen            int64    // tokens produced so far
	kv             []uint64 // concat: K, V ids per layer (2L); paged: block ids
	t, ctx         int64    // this forward: query tokens, context length
}

type serveGen struct {
	e     *emitter
	m     *lmModel
	paged bool
	bt    int64
	reqs  int64
	lam   float64
	pMin  int64
	pMax  int64
	oMin  int64
	oMax  int64
	maxB  int64

	arr, lens *rand.Rand
	blockB    int64
	weights   []uint64
	running   []*serveReq
	pool      []*serveReq // finished requests, reused
	group     []*serveReq // scratch: the sequences of one forward
	tmp       []uint64
}

func buildServe(p *paramReader, seed uint64) (*plan, error) {
	g := &serveGen{}
	g.reqs = p.int("requests", 64, 1, 1<<40)
	g.lam = p.float("arrival", 0.5, 0, 1e6)
	g.pMin = p.int("prompt_min", 16, 1, maxTokens)
	g.pMax = p.int("prompt_max", 512, 1, maxTokens)
	g.oMin = p.int("output_min", 16, 1, maxTokens)
	g.oMax = p.int("output_max", 256, 1, maxTokens)
	g.maxB = p.int("max_batch", 16, 1, 1<<16)
	g.paged = p.choice("kv", "paged", "concat", "paged") == "paged"
	g.bt = p.int("block_tokens", 16, 1, maxTokens)
	if g.pMax < g.pMin {
		p.fail("prompt_max", "%d is less than prompt_min %d", g.pMax, g.pMin)
	}
	if g.oMax < g.oMin {
		p.fail("output_max", "%d is less than output_min %d", g.oMax, g.oMin)
	}
	// The longest context: the prompt and every output token but the last,
	// which is sampled and never fed back.
	ctxMax := g.pMax + g.oMax - 1
	m := readModel(p, "bf16", ctxMax)
	if err := p.err(); err != nil {
		return nil, err
	}
	g.m = m
	c := sizeCheck{p}
	nMax := g.pMax // tokens of one prefill (concat)
	if g.paged {
		nMax = g.maxB * g.pMax // all admitted prompts at once
	}
	nMax = max(nMax, g.maxB)
	c.need("the token ids tokens×8", nMax, 8)
	c.need("a hidden state tokens×D×e", nMax, m.D, m.e)
	c.need("the QKV output tokens×3D×e", nMax, 3*m.D, m.e)
	c.need("an MLP intermediate tokens×F×e", nMax, m.F, m.e)
	c.need("the sampling probabilities max_batch×V×4", g.maxB, m.V, 4)
	if g.paged {
		c.need("a KV block 2×layers×block_tokens×D×e", 2*m.L, g.bt, m.D, m.e)
	} else {
		c.need("a request's K cache (prompt_max+output_max-1)×D×e", ctxMax, m.D, m.e)
		c.need("a prefill score matrix H×prompt_max×prompt_max×e", m.H, g.pMax, g.pMax, m.e)
		c.need("a decode score matrix H×(prompt_max+output_max-1)×e", m.H, ctxMax, m.e)
	}
	m.checkWeights(c, m.e)
	if err := p.err(); err != nil {
		return nil, err
	}
	g.blockB = 2 * m.L * g.bt * m.D * m.e
	g.arr = rand.New(rand.NewPCG(seed, pcgArrivals))
	g.lens = rand.New(rand.NewPCG(seed, pcgLengths))
	var pb int64
	for _, n := range m.numel {
		pb += n * m.e
	}
	kv := "KV cache grown by concatenation"
	if g.paged {
		kv = fmt.Sprintf("paged KV cache (%d-token blocks)", g.bt)
	}
	return &plan{
		desc: fmt.Sprintf("LLM serving, %s, %s; %d requests arriving %g per iteration, prompts %d-%d and outputs %d-%d tokens, continuous batching up to %d, %s",
			m.describe(), m.dtype, g.reqs, g.lam, g.pMin, g.pMax, g.oMin, g.oMax, g.maxB, kv),
		run:      g.run,
		persistN: int64(len(m.numel)),
		persistB: pb,
	}, nil
}

// poisson draws a Poisson(lam) count by inversion, splitting a large mean
// into parts of at most 16 (a sum of independent Poisson counts is
// Poisson) so that e^-lam never underflows.
func poisson(r *rand.Rand, lam float64) int64 {
	var n int64
	for lam > 0 {
		l := min(lam, 16)
		lam -= l
		u := r.Float64()
		p := math.Exp(-l)
		cdf := p
		k := int64(0)
		for u > cdf && k < 1000 {
			k++
			p *= l / float64(k)
			cdf += p
		}
		n += k
	}
	return n
}

// poissonPos draws a Poisson(lam) count conditioned on being at least 1:
// the arrivals of the first iteration with any, after an idle spell. For
// lam >= 1 by rejection; below, by inversion of the zero-truncated
// distribution P(k) = lam^k e^-lam / (k! (1 − e^-lam)), whose P(1) is
// lam/(e^lam − 1) (math.Expm1 keeps it exact for tiny lam).
func poissonPos(r *rand.Rand, lam float64) int64 {
	if lam >= 1 {
		for {
			if k := poisson(r, lam); k > 0 {
				return k
			}
		}
	}
	u := r.Float64()
	p := lam / math.Expm1(lam)
	cdf := p
	k := int64(1)
	for u > cdf && k < 1000 {
		k++
		p *= lam / float64(k)
		cdf += p
	}
	return k
}

func (g *serveGen) run(e *emitter) {
	g.e = e
	m := g.m
	for _, n := range m.numel {
		g.weights = append(g.weights, e.alloc(n*m.e))
	}
	var arrived, admitted, finished, decodeStep int64
	for finished < g.reqs {
		// Arrivals of this iteration.
		if arrived < g.reqs {
			var k int64
			if len(g.running) == 0 && arrived == admitted {
				k = poissonPos(g.arr, g.lam) // idle: skip to the next arrival
			} else {
				k = poisson(g.arr, g.lam)
			}
			k = min(k, g.reqs-arrived)
			for range k {
				e.markN("request", arrived)
				arrived++
			}
		}
		// Admission and prefill.
		old := len(g.running)
		for admitted < arrived && int64(len(g.running)) < g.maxB {
			r := g.newReq(admitted)
			admitted++
			g.running = append(g.running, r)
		}
		if fresh := g.running[old:]; len(fresh) > 0 {
			e.mark("prefill")
			if g.paged {
				for _, r := range fresh {
					for range ceilDiv(r.prompt, g.bt) {
						r.kv = append(r.kv, e.alloc(g.blockB))
					}
					r.t, r.ctx = r.prompt, r.prompt
				}
				g.forward(fresh)
			} else {
				for _, r := range fresh {
					r.t, r.ctx = r.prompt, r.prompt
					g.group = append(g.group[:0], r)
					g.forward(g.group)
				}
			}
			for _, r := range fresh {
				r.gen = 1
			}
		}
		// Decode one token for every request that was already running.
		if dec := g.running[:old]; len(dec) > 0 {
			e.markN("decode", decodeStep)
			decodeStep++
			for _, r := range dec {
				c := r.prompt + r.gen - 1 // tokens already in the cache
				if g.paged && c%g.bt == 0 {
					r.kv = append(r.kv, e.alloc(g.blockB))
				}
				r.t, r.ctx = 1, c+1
			}
			g.forward(dec)
			for _, r := range dec {
				r.gen++
			}
		}
		// Completion: free the caches of finished requests, keep the
		// others in order.
		keep := g.running[:0]
		for _, r := range g.running {
			if r.gen < r.output {
				keep = append(keep, r)
				continue
			}
			for _, id := range r.kv {
				e.free(id)
			}
			r.kv = r.kv[:0]
			g.pool = append(g.pool, r)
			finished++
		}
		clear(g.running[len(keep):])
		g.running = keep
	}
}

// newReq admits request num, drawing its lengths.
func (g *serveGen) newReq(num int64) *serveReq {
	var r *serveReq
	if n := len(g.pool); n > 0 {
		r = g.pool[n-1]
		g.pool = g.pool[:n-1]
	} else {
		r = &serveReq{}
	}
	kv := r.kv[:0]
	*r = serveReq{num: num, kv: kv}
	r.prompt = g.pMin + g.lens.Int64N(g.pMax-g.pMin+1)
	r.output = g.oMin + g.lens.Int64N(g.oMax-g.oMin+1)
	if !g.paged {
		for range 2 * g.m.L {
			r.kv = append(r.kv, 0)
		}
	}
	return r
}

// forward runs the model over the sequences seqs (r.t query tokens each
// against r.ctx keys, the new ones included). See the package comment of
// llm-serve for the tensors.
func (g *serveGen) forward(seqs []*serveReq) {
	e, m := g.e, g.m
	var N int64
	for _, r := range seqs {
		N += r.t
	}
	n := int64(len(seqs))
	act := N * m.D * m.e
	ids := e.alloc(N * 8)
	x := e.alloc(act)
	e.free(ids)
	var cos, sin uint64
	if m.gpt2() {
		pos := e.alloc(act)
		x2 := e.alloc(act)
		e.freeAll(x, pos)
		x = x2
	} else {
		cos = e.alloc(N * m.hd * m.e)
		sin = e.alloc(N * m.hd * m.e)
	}
	for l := range m.L {
		n1 := e.alloc(act)
		var qkv, q, k, v uint64
		if m.gpt2() {
			qkv = e.alloc(N * 3 * m.D * m.e)
			e.free(n1)
		} else {
			q0 := e.alloc(act)
			k0 := e.alloc(act)
			v = e.alloc(act)
			e.free(n1)
			q = e.alloc(act)
			e.free(q0)
			k = e.alloc(act)
			e.free(k0)
		}
		var merged uint64
		if g.paged {
			merged = e.alloc(act)
		} else {
			ys := g.tmp[:0]
			for _, r := range seqs {
				// The request's cache grows to ctx tokens: a new K, then a
				// new V, each freeing the shorter one it replaces.
				for j := range int64(2) {
					i := 2*l + j
					nk := e.alloc(r.ctx * m.D * m.e)
					if r.kv[i] != 0 {
						e.free(r.kv[i])
					}
					r.kv[i] = nk
				}
				sc := m.H * r.t * r.ctx * m.e
				raw := e.alloc(sc)
				scaled := e.alloc(sc)
				e.free(raw)
				masked := e.alloc(sc)
				e.free(scaled)
				probs := e.alloc(sc)
				e.free(masked)
				ys = append(ys, e.alloc(r.t*m.D*m.e))
				e.free(probs)
			}
			merged = e.alloc(act)
			e.freeAll(ys...)
			g.tmp = ys
		}
		if m.gpt2() {
			e.free(qkv)
		} else {
			e.freeAll(q, k, v)
		}
		o := e.alloc(act)
		e.free(merged)
		x1 := e.alloc(act)
		e.freeAll(x, o)
		n2 := e.alloc(act)
		ffn := N * m.F * m.e
		var mo uint64
		if m.gpt2() {
			h := e.alloc(ffn)
			e.free(n2)
			gl := e.alloc(ffn)
			e.free(h)
			mo = e.alloc(act)
			e.free(gl)
		} else {
			gate := e.alloc(ffn)
			up := e.alloc(ffn)
			e.free(n2)
			a := e.alloc(ffn)
			e.free(gate)
			pr := e.alloc(ffn)
			e.freeAll(a, up)
			mo = e.alloc(act)
			e.free(pr)
		}
		x = e.alloc(act)
		e.freeAll(x1, mo)
	}
	if !m.gpt2() {
		e.freeAll(cos, sin)
	}
	nf := e.alloc(act)
	e.free(x)
	last := e.alloc(n * m.D * m.e)
	e.free(nf)
	logits := e.alloc(n * m.V * m.e)
	e.free(last)
	if m.e != 4 {
		l32 := e.alloc(n * m.V * 4)
		e.free(logits)
		logits = l32
	}
	probs := e.alloc(n * m.V * 4)
	e.free(logits)
	next := e.alloc(n * 8)
	e.free(probs)
	e.free(next)
}

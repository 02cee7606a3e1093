package gen

import (
	"fmt"
	"slices"
)

// transformer-train: a decoder-only transformer training loop as PyTorch
// eager runs it (nanoGPT for gpt2, Hugging Face Llama for llama), one
// allocation per tensor an op produces.
//
// Sizes, with the model notation of model.go, batch B, sequence S, tokens
// T = B·S:
//
//	act   = T·D·e      one hidden state (a layer's input, a norm output, ...)
//	qkv   = T·3D·e     gpt2's fused QKV projection output
//	ffn   = T·F·e      an MLP intermediate
//	score = B·H·S·S·e  one attention score matrix (eager attention)
//	stat  = T·4        LayerNorm mean or rstd (fp32, one per token)
//	lse   = B·H·S·4    FlashAttention's log-sum-exp (fp32, one per row)
//	logit = T·V·e      the output logits; T·V·4 once upcast to fp32
//
// Trace structure: the parameters (and fp32 master copies under mixed
// precision) are allocated once before "step:0"; then per step:
//
//	step:N     token ids and targets, T·8 each (int64)
//	forward    embedding, each layer in order (see fwdLayer), the head and
//	           the loss; activations that backward needs stay live
//	backward   the head, each layer in reverse order (see bwdLayer): saved
//	           activations are freed as their op's backward runs, gradient
//	           buffers of activations are allocated and freed, and each
//	           parameter's gradient (numel×e) is allocated when computed
//	optimizer  see trainState.step: Adam moments or SGD momentum created on
//	           step 0 and kept, temporaries, gradients freed
//
// then the loss and the token tensors are freed. With checkpointing=full
// (torch.utils.checkpoint around every layer) forward keeps only each
// layer's input and frees the layer's intermediates as soon as they are
// consumed; backward first recomputes the layer's forward with autograd on
// (allocating its saved activations again, discarding its output), then
// runs its backward.
var trainSpec = &kindSpec{
	kind: TransformerTrain,
	params: sortDocs(append(modelParamDocs("fp32"),
		ParamDoc{"attention", "eager", "eager (scores B×H×S×S materialised: matmul, scale, causal mask, softmax, each a new tensor) or flash (a fused kernel that saves only its output and an fp32 log-sum-exp B×H×S×4)"},
		ParamDoc{"batch", "8", "batch size B"},
		ParamDoc{"checkpointing", "none", "none, or full: activation checkpointing of every layer (forward keeps only layer inputs; backward recomputes each layer)"},
		ParamDoc{"optimizer", "adam", "adam (exp_avg and exp_avg_sq, fp32, created on step 0) or sgd (momentum buffer, fp32, created on step 0)"},
		ParamDoc{"seq", "1024", "sequence length S"},
		ParamDoc{"steps", "3", "training steps"},
	)),
	build: buildTrain,
}

func sortDocs(d []ParamDoc) []ParamDoc {
	slices.SortFunc(d, func(a, b ParamDoc) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return d
}

type trainGen struct {
	e     *emitter
	m     *lmModel
	ts    *trainState
	B, S  int64
	steps int64
	ckpt  bool
	flash bool

	act, qkv, ffn, score, stat, lse, logit int64
	sv                                     []tlayer
}

// tlayer holds the ids of one layer's tensors saved for backward (0: none).
type tlayer struct {
	in                  uint64 // layer input, saved by norm1 (the checkpoint's input)
	n1, m1, r1          uint64 // norm1 output, mean (gpt2 only), rstd
	qkv                 uint64 // gpt2: fused projection output
	q, k, v             uint64 // llama: rotated q, rotated k, v
	probs, merged       uint64 // eager: softmax output; heads merged (o-proj input)
	attn, lse           uint64 // flash: output (o-proj input) and log-sum-exp
	x1                  uint64 // residual stream after attention, saved by norm2
	n2, m2, r2          uint64 // norm2 output, mean (gpt2), rstd
	h, g                uint64 // gpt2: c_fc output, GELU output
	gate, up, act, prod uint64 // llama: gate and up projections, silu(gate), silu(gate)·up
}

func buildTrain(p *paramReader, seed uint64) (*plan, error) {
	B := p.int("batch", 8, 1, maxTokens)
	S := p.int("seq", 1024, 1, maxTokens)
	m := readModel(p, "fp32", S)
	g := &trainGen{m: m, B: B, S: S}
	g.steps = p.int("steps", 3, 1, 1<<40)
	g.ckpt = p.choice("checkpointing", "none", "none", "full") == "full"
	g.flash = p.choice("attention", "eager", "eager", "flash") == "flash"
	adam := p.choice("optimizer", "adam", "adam", "sgd") == "adam"
	if err := p.err(); err != nil {
		return nil, err
	}
	c := sizeCheck{p}
	T, D, e := B*S, m.D, m.e
	c.need("the token ids B×S×8", B, S, 8)
	c.need("a hidden state B×S×D×e", B, S, D, e)
	c.need("the QKV output B×S×3D×e", B, S, 3*D, e)
	c.need("an MLP intermediate B×S×F×e", B, S, m.F, e)
	c.need("the fp32 logits B×S×V×4", B, S, m.V, 4)
	c.need("FlashAttention's dq accumulator B×S×D×4", B, S, D, 4)
	if !g.flash {
		c.need("an attention score matrix B×H×S×S×e", B, m.H, S, S, e)
	}
	m.checkWeights(c, 4)
	if err := p.err(); err != nil {
		return nil, err
	}
	g.act = T * D * e
	g.qkv = T * 3 * D * e
	g.ffn = T * m.F * e
	g.score = B * m.H * S * S * e
	g.stat = T * 4
	g.lse = B * m.H * S * 4
	g.logit = T * m.V * e
	g.ts = newTrainState(m.numel, e, adam)
	g.sv = make([]tlayer, m.L)
	pn, pb := g.ts.persistent()
	opt := "adam"
	if !adam {
		opt = "sgd momentum"
	}
	ck := "no checkpointing"
	if g.ckpt {
		ck = "full activation checkpointing"
	}
	att := "eager"
	if g.flash {
		att = "flash"
	}
	return &plan{
		desc: fmt.Sprintf("transformer training, %s; batch %d × seq %d, %s, %s, %s attention, %s; %d steps",
			m.describe(), B, S, m.dtype, opt, att, ck, g.steps),
		run:      g.run,
		persistN: pn,
		persistB: pb,
	}, nil
}

func (g *trainGen) run(e *emitter) {
	g.e, g.ts.e = e, e
	m := g.m
	g.ts.initParams()
	for n := range g.steps {
		e.markN("step", n)
		ids := e.alloc(g.B * g.S * 8) // input token ids, int64
		tgt := e.alloc(g.B * g.S * 8) // target token ids, int64
		e.mark("forward")
		x, rope := g.embedFwd()
		for l := range m.L {
			x = g.fwdLayer(&g.sv[l], x, !g.ckpt)
		}
		h := g.headFwd(x)
		e.mark("backward")
		dx := g.headBwd(h)
		for l := m.L - 1; l >= 0; l-- {
			if g.ckpt {
				// Recompute the layer with autograd on; its output is not
				// needed (backward starts from the incoming gradient).
				e.free(g.fwdLayer(&g.sv[l], g.sv[l].in, true))
			}
			dx = g.bwdLayer(l, &g.sv[l], dx)
		}
		g.embedBwd(dx, rope)
		e.mark("optimizer")
		g.ts.step(n)
		e.freeAll(h.loss, ids, tgt)
	}
}

// embedFwd is the embedding: gpt2 looks up token rows (act) and position
// rows (S·D·e, broadcast over the batch) and adds them (act), freeing both
// lookups; llama looks up token rows (act) and computes the rotary cos and
// sin tables for every token's position, B·S·hd·e each, which every
// layer's rotary op saves, so they live until the end of backward.
func (g *trainGen) embedFwd() (x uint64, rope [2]uint64) {
	e, m := g.e, g.m
	if m.gpt2() {
		tok := e.alloc(g.act)
		pos := e.alloc(g.S * m.D * m.e)
		x = e.alloc(g.act)
		e.freeAll(tok, pos)
		return x, rope
	}
	x = e.alloc(g.act)
	rope[0] = e.alloc(g.B * g.S * m.hd * m.e)
	rope[1] = e.alloc(g.B * g.S * m.hd * m.e)
	return x, rope
}

// embedBwd ends backward at the embedding: gpt2 sums the gradient over the
// batch for the broadcast position rows (S·D·e), whose dense embedding
// backward is wpe's gradient (C·D·e); the token embedding's dense backward
// (V·D·e) is added into wte's gradient, already allocated by the tied head.
// llama's token embedding backward allocates embed_tokens' gradient; the
// rotary tables are freed.
func (g *trainGen) embedBwd(dx uint64, rope [2]uint64) {
	e, m := g.e, g.m
	if m.gpt2() {
		dpos := e.alloc(g.S * m.D * m.e)
		g.ts.grad(1) // wpe
		e.free(dpos)
		g.ts.grad(m.embedIdx())
		e.free(dx)
		return
	}
	g.ts.grad(m.embedIdx())
	e.free(dx)
	e.freeAll(rope[0], rope[1])
}

// drop frees the nonzero ids when the forward is not keeping activations.
func (g *trainGen) drop(keep bool, ids ...uint64) {
	if keep {
		return
	}
	for _, id := range ids {
		if id != 0 {
			g.e.free(id)
		}
	}
}

// fwdLayer runs one transformer block on x and returns its output (act).
// With keep, every tensor that autograd saves stays live in s; without
// (a checkpointed layer under no_grad), each intermediate is freed as soon
// as its consumer has run. In order:
//
//	norm1       n1 = act; gpt2 LayerNorm also saves mean and rstd (stat
//	            each), llama RMSNorm rstd (stat)
//	projection  gpt2: qkv = n1·W+b (qkv bytes), q, k, v are views of it;
//	            llama: q, k, v = act each, then rotary: q' = act (frees q),
//	            k' = act (frees k)
//	attention   eager: raw = q·kᵀ (score), scaled = raw/√hd (score, frees
//	            raw), masked = causal mask (score, frees scaled), probs =
//	            softmax (score, frees masked, saved), y = probs·v (act, the
//	            heads B×H×S×hd), merged = y transposed to B×S×D and made
//	            contiguous (act, frees y, saved by the output projection);
//	            flash: out = act and lse (saved both), out is the merged
//	            input of the output projection
//	o-proj      ao = merged·Wo (+b) (act); x1 = x + ao (act, frees ao)
//	norm2       n2 = act (+ mean, rstd as norm1)
//	MLP         gpt2: h = n2·Wfc+b (ffn), g = GELU(h) (ffn, saved with h),
//	            mo = g·Wproj+b (act); llama: gate = n2·Wg, up = n2·Wu
//	            (ffn each), a = silu(gate) (ffn), p = a·up (ffn), mo = p·Wd
//	            (act)
//	residual    out = x1 + mo (act, frees mo)
//
// The block's input x is not freed here: norm1 saves it (or the checkpoint
// keeps it) until this layer's backward.
func (g *trainGen) fwdLayer(s *tlayer, x uint64, keep bool) uint64 {
	e, m := g.e, g.m
	*s = tlayer{in: x}
	s.n1 = e.alloc(g.act)
	if m.gpt2() {
		s.m1 = e.alloc(g.stat)
	}
	s.r1 = e.alloc(g.stat)
	if m.gpt2() {
		s.qkv = e.alloc(g.qkv)
		g.drop(keep, s.n1, s.m1, s.r1)
	} else {
		q := e.alloc(g.act)
		k := e.alloc(g.act)
		s.v = e.alloc(g.act)
		g.drop(keep, s.n1, s.r1)
		s.q = e.alloc(g.act)
		e.free(q)
		s.k = e.alloc(g.act)
		e.free(k)
	}
	var mergedIn uint64 // the output projection's input
	if !g.flash {
		raw := e.alloc(g.score)
		scaled := e.alloc(g.score)
		e.free(raw)
		masked := e.alloc(g.score)
		e.free(scaled)
		s.probs = e.alloc(g.score)
		e.free(masked)
		y := e.alloc(g.act)
		g.drop(keep, s.probs, s.qkv, s.q, s.k, s.v)
		s.merged = e.alloc(g.act)
		e.free(y)
		mergedIn = s.merged
	} else {
		s.attn = e.alloc(g.act)
		s.lse = e.alloc(g.lse)
		g.drop(keep, s.lse, s.qkv, s.q, s.k, s.v)
		mergedIn = s.attn
	}
	ao := e.alloc(g.act)
	g.drop(keep, mergedIn)
	s.x1 = e.alloc(g.act)
	e.free(ao)
	s.n2 = e.alloc(g.act)
	if m.gpt2() {
		s.m2 = e.alloc(g.stat)
	}
	s.r2 = e.alloc(g.stat)
	var mo uint64
	if m.gpt2() {
		s.h = e.alloc(g.ffn)
		g.drop(keep, s.n2, s.m2, s.r2)
		s.g = e.alloc(g.ffn)
		g.drop(keep, s.h)
		mo = e.alloc(g.act)
		g.drop(keep, s.g)
	} else {
		s.gate = e.alloc(g.ffn)
		s.up = e.alloc(g.ffn)
		g.drop(keep, s.n2, s.r2)
		s.act = e.alloc(g.ffn)
		g.drop(keep, s.gate)
		s.prod = e.alloc(g.ffn)
		g.drop(keep, s.act, s.up)
		mo = e.alloc(g.act)
		g.drop(keep, s.prod)
	}
	out := e.alloc(g.act)
	e.free(mo)
	g.drop(keep, s.x1)
	return out
}

// freeNZ frees the nonzero ids.
func (g *trainGen) freeNZ(ids ...uint64) {
	for _, id := range ids {
		if id != 0 {
			g.e.free(id)
		}
	}
}

// bwdLayer runs layer l's backward from dOut, the gradient of its output
// (act), and returns the gradient of its input (act). Autograd runs the
// ops in reverse; each op's backward allocates the gradients of its inputs,
// frees the gradient it consumed once every consumer is done, frees the
// tensors it saved, and a linear layer's backward allocates its weight's
// (and bias's) gradient. In order:
//
//	MLP       gpt2: dg = dOut·Wprojᵀ (ffn; frees g), dh = GELU'(h)⊙dg
//	          (ffn; frees dg, h), dn2 = dh·Wfcᵀ (act; frees dh, n2);
//	          llama: dp (ffn; frees p), da and dup (ffn each; frees dp, a,
//	          up), dgate = silu'(gate)⊙da (ffn; frees da, gate), the two
//	          input gradients of the up and gate projections (act each; free
//	          dup and dgate) summed into dn2 (act; frees both, n2)
//	norm2     dx1' (act; frees dn2, the statistics, x1), dx1 = dOut + dx1'
//	          (act; frees both: the residual's two paths meet)
//	o-proj    dm = dx1·Woᵀ (act; frees merged in eager mode)
//	attention eager: dprobs = dy·vᵀ (score), dv = probsᵀ·dy (act; frees dm),
//	          dmasked = softmax' (score; frees dprobs, probs), dscaled
//	          (score; frees dmasked), draw (score; frees dscaled), dq, dk =
//	          draw·k, drawᵀ·q (act each; frees draw, and llama's q', k', v);
//	          flash: softmax_d = rowsum(dO⊙O) (lse bytes) and the fp32 dq
//	          accumulator (T·D·4) are scratch, dq, dk, dv (act each), then
//	          the scratch, dm, out and lse are freed
//	QKV       gpt2: dqkv = cat(dq, dk, dv) (qkv; frees them and qkv), dn1 =
//	          dqkv·Wᵀ (act; frees dqkv, n1); llama: rotary backward dq', dk'
//	          (act each; frees dq, dk), the three projections' input
//	          gradients (act each) summed pairwise into dn1 (frees n1)
//	norm1     dx' (act; frees dn1, the statistics, the layer input x), dx =
//	          dx1 + dx' (act; frees both)
func (g *trainGen) bwdLayer(l int64, s *tlayer, dOut uint64) uint64 {
	e, m, ts := g.e, g.m, g.ts
	var dn2 uint64
	if m.gpt2() {
		dg := e.alloc(g.ffn)
		ts.grad(m.lp(l, gFc2W))
		ts.grad(m.lp(l, gFc2B))
		e.free(s.g)
		dh := e.alloc(g.ffn)
		e.freeAll(dg, s.h)
		dn2 = e.alloc(g.act)
		ts.grad(m.lp(l, gFcW))
		ts.grad(m.lp(l, gFcB))
		e.freeAll(dh, s.n2)
	} else {
		dp := e.alloc(g.ffn)
		ts.grad(m.lp(l, lDown))
		e.free(s.prod)
		da := e.alloc(g.ffn)
		dup := e.alloc(g.ffn)
		e.freeAll(dp, s.act, s.up)
		dgate := e.alloc(g.ffn)
		e.freeAll(da, s.gate)
		dnU := e.alloc(g.act)
		ts.grad(m.lp(l, lUp))
		e.free(dup)
		dnG := e.alloc(g.act)
		ts.grad(m.lp(l, lGate))
		e.free(dgate)
		dn2 = e.alloc(g.act)
		e.freeAll(dnU, dnG, s.n2)
	}
	// norm2 and the residual around the MLP.
	dx1p := e.alloc(g.act)
	if m.gpt2() {
		ts.grad(m.lp(l, gLn2W))
		ts.grad(m.lp(l, gLn2B))
	} else {
		ts.grad(m.lp(l, lLn2))
	}
	e.free(dn2)
	g.freeNZ(s.m2, s.r2)
	e.free(s.x1)
	dx1 := e.alloc(g.act)
	e.freeAll(dx1p, dOut)
	// Output projection.
	dm := e.alloc(g.act)
	if m.gpt2() {
		ts.grad(m.lp(l, gProjW))
		ts.grad(m.lp(l, gProjB))
	} else {
		ts.grad(m.lp(l, lO))
	}
	var dq, dk, dv uint64
	if !g.flash {
		e.free(s.merged)
		dprobs := e.alloc(g.score)
		dv = e.alloc(g.act)
		e.free(dm)
		dmasked := e.alloc(g.score)
		e.freeAll(dprobs, s.probs)
		dscaled := e.alloc(g.score)
		e.free(dmasked)
		draw := e.alloc(g.score)
		e.free(dscaled)
		dq = e.alloc(g.act)
		dk = e.alloc(g.act)
		e.free(draw)
		g.freeNZ(s.q, s.k, s.v)
	} else {
		sd := e.alloc(g.lse)
		acc := e.alloc(g.B * g.S * m.D * 4)
		dq = e.alloc(g.act)
		dk = e.alloc(g.act)
		dv = e.alloc(g.act)
		e.freeAll(acc, sd, dm, s.attn, s.lse)
		g.freeNZ(s.q, s.k, s.v)
	}
	var dn1 uint64
	if m.gpt2() {
		dqkv := e.alloc(g.qkv)
		e.freeAll(dq, dk, dv, s.qkv)
		dn1 = e.alloc(g.act)
		ts.grad(m.lp(l, gQkvW))
		ts.grad(m.lp(l, gQkvB))
		e.freeAll(dqkv, s.n1)
	} else {
		dq0 := e.alloc(g.act)
		e.free(dq)
		dk0 := e.alloc(g.act)
		e.free(dk)
		dnV := e.alloc(g.act)
		ts.grad(m.lp(l, lV))
		e.free(dv)
		dnK := e.alloc(g.act)
		ts.grad(m.lp(l, lK))
		e.free(dk0)
		sum := e.alloc(g.act)
		e.freeAll(dnV, dnK)
		dnQ := e.alloc(g.act)
		ts.grad(m.lp(l, lQ))
		e.free(dq0)
		dn1 = e.alloc(g.act)
		e.freeAll(sum, dnQ, s.n1)
	}
	// norm1 and the residual around attention.
	dxp := e.alloc(g.act)
	if m.gpt2() {
		ts.grad(m.lp(l, gLn1W))
		ts.grad(m.lp(l, gLn1B))
	} else {
		ts.grad(m.lp(l, lLn1))
	}
	e.free(dn1)
	g.freeNZ(s.m1, s.r1)
	e.free(s.in)
	dx := e.alloc(g.act)
	e.freeAll(dxp, dx1)
	return dx
}

// headState is what the head's forward leaves for its backward.
type headState struct {
	x, nf, mf, rf, logp, loss uint64
}

// headFwd is the final norm, the output head and the loss:
//
//	nf = norm(x) (act; gpt2 saves mean and rstd, llama rstd: stat each)
//	logits = nf·Wheadᵀ (logit = T·V·e; not saved by anything)
//	bf16/fp16: logits.float() (T·V·4, frees the logits): cross-entropy
//	  runs in fp32 as autocast does
//	logp = log_softmax (T·V·4, saved; frees the logits)
//	loss = nll_loss(logp, targets), mean over tokens: a 4-byte fp32 scalar
//
// The layer stack's output x stays live: the final norm saved it.
func (g *trainGen) headFwd(x uint64) headState {
	e, m := g.e, g.m
	h := headState{x: x}
	h.nf = e.alloc(g.act)
	if m.gpt2() {
		h.mf = e.alloc(g.stat)
	}
	h.rf = e.alloc(g.stat)
	logits := e.alloc(g.logit)
	if m.e != 4 {
		l32 := e.alloc(g.B * g.S * m.V * 4)
		e.free(logits)
		logits = l32
	}
	h.logp = e.alloc(g.B * g.S * m.V * 4)
	e.free(logits)
	h.loss = e.alloc(4)
	return h
}

// headBwd starts backward:
//
//	seed = ones_like(loss) (4 bytes)
//	dlogp = nll_loss backward (T·V·4; frees seed)
//	dlogits = log_softmax backward (T·V·4; frees dlogp, logp)
//	bf16/fp16: cast back (logit bytes; frees the fp32 one)
//	dnf = dlogits·Whead (act), and the head weight's gradient (V·D·e;
//	  for gpt2 this is wte's, the tied embedding); frees dlogits and nf
//	dx = norm backward (act) and the norm's weight (and bias) gradient;
//	  frees dnf, the statistics and the stack's output x
func (g *trainGen) headBwd(h headState) uint64 {
	e, m := g.e, g.m
	seed := e.alloc(4)
	dlogp := e.alloc(g.B * g.S * m.V * 4)
	e.free(seed)
	dl := e.alloc(g.B * g.S * m.V * 4)
	e.freeAll(dlogp, h.logp)
	if m.e != 4 {
		d := e.alloc(g.logit)
		e.free(dl)
		dl = d
	}
	dnf := e.alloc(g.act)
	g.ts.grad(m.headIdx())
	e.freeAll(dl, h.nf)
	dx := e.alloc(g.act)
	g.ts.grad(m.normFIdx())
	if m.gpt2() {
		g.ts.grad(m.normFIdx() + 1)
	}
	e.free(dnf)
	g.freeNZ(h.mf, h.rf)
	e.free(h.x)
	return dx
}

package gen

// trainState holds what a training loop keeps across steps: the ids of the
// parameters, their fp32 master copies, their gradients and the optimizer
// state. It is shared by transformer-train and cnn-train.
//
// Precision. With dtype fp32 the model, its gradients and the optimizer
// state are fp32. With bf16 or fp16 (mixed precision in the style of
// Megatron-LM and DeepSpeed) the model's parameters, activations and
// gradients are in the low-precision dtype and the optimizer works on an
// fp32 master copy of every parameter, with fp32 state.
type trainState struct {
	e     *emitter
	numel []int64 // elements of each parameter tensor
	eb    int64   // bytes per element of the model dtype
	mixed bool    // eb < 4: fp32 master weights
	adam  bool    // Adam (else SGD with momentum)

	params, master []uint64
	grads          []uint64 // 0: no gradient yet this step
	st1, st2       []uint64 // Adam exp_avg, exp_avg_sq; SGD momentum_buffer in st1
	tmp            []uint64 // mixed precision: the fp32 master gradients
	den            []uint64 // Adam's denominators
}

func newTrainState(numel []int64, eb int64, adam bool) *trainState {
	n := len(numel)
	return &trainState{
		numel: numel, eb: eb, mixed: eb < 4, adam: adam,
		params: make([]uint64, n), master: make([]uint64, n), grads: make([]uint64, n),
		st1: make([]uint64, n), st2: make([]uint64, n), tmp: make([]uint64, n), den: make([]uint64, n),
	}
}

// persistent is what stays live at the end of training: the parameters
// (numel×e each), under mixed precision their fp32 master copies
// (numel×4), and the optimizer state: Adam's exp_avg and exp_avg_sq
// (2×numel×4) or SGD's momentum buffer (numel×4).
func (t *trainState) persistent() (n, b int64) {
	var p int64
	for _, x := range t.numel {
		p += x
	}
	k := int64(len(t.numel))
	n, b = k, p*t.eb
	if t.mixed {
		n, b = n+k, b+p*4
	}
	if t.adam {
		n, b = n+2*k, b+2*p*4
	} else {
		n, b = n+k, b+p*4
	}
	return n, b
}

// initParams allocates every parameter (numel×e), in parameter order, as
// the model's construction and .to(device) do; under mixed precision the
// optimizer wrapper then makes an fp32 master copy of each (numel×4).
func (t *trainState) initParams() {
	for i, n := range t.numel {
		t.params[i] = t.e.alloc(n * t.eb)
	}
	if t.mixed {
		for i, n := range t.numel {
			t.master[i] = t.e.alloc(n * 4)
		}
	}
}

// grad is parameter i's gradient computed by a backward op: the first one
// of a step allocates the .grad buffer (numel×e), which AccumulateGrad
// keeps. A later contribution (a tied weight) arrives as a temporary of the
// same size that is added into .grad in place and freed.
func (t *trainState) grad(i int) {
	if t.grads[i] == 0 {
		t.grads[i] = t.e.alloc(t.numel[i] * t.eb)
		return
	}
	t.e.free(t.e.alloc(t.numel[i] * t.eb))
}

// step is the optimizer phase of step n, modelled on PyTorch's foreach
// implementations (the default on GPUs), which apply each operation to the
// whole list of parameters before the next:
//
//  1. mixed precision only: the gradients are copied to fp32 as the master
//     parameters' .grad (numel×4 each), then the model's gradients are
//     freed (set to None);
//  2. step 0 only, the optimizer state is created lazily, per parameter:
//     Adam's exp_avg and exp_avg_sq (numel×4 each), or SGD's
//     momentum_buffer = clone(grad) (numel×4); it persists;
//  3. Adam: torch._foreach_sqrt(exp_avg_sq) allocates the denominators
//     (numel×4 each), which the in-place update consumes and then frees;
//     SGD with momentum updates in place and allocates nothing;
//  4. zero_grad(set_to_none=True) frees every gradient.
func (t *trainState) step(n int64) {
	e := t.e
	grads := t.grads
	if t.mixed {
		for i, x := range t.numel {
			t.tmp[i] = e.alloc(x * 4)
		}
		for i := range t.numel {
			e.free(t.grads[i])
			t.grads[i] = 0
		}
		grads = t.tmp
	}
	if n == 0 {
		for i, x := range t.numel {
			t.st1[i] = e.alloc(x * 4)
			if t.adam {
				t.st2[i] = e.alloc(x * 4)
			}
		}
	}
	if t.adam {
		for i, x := range t.numel {
			t.den[i] = e.alloc(x * 4)
		}
		for i := range t.numel {
			e.free(t.den[i])
		}
	}
	for i := range t.numel {
		e.free(grads[i])
		grads[i] = 0
	}
}

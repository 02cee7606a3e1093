package heapsim

// ForgetPlans is forgetPlans for the external tests.
var ForgetPlans = forgetPlans

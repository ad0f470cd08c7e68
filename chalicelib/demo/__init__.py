"""The demo: a support agent in two versions, its test cases, and the comparison report."""

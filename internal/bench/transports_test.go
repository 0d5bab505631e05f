package bench

// Tests may run over NARMA_TRANSPORT=async, which only tests link.
import _ "github.com/narma-rma/narma/internal/transport/async"

package inproc

import _ "github.com/narma-rma/narma/internal/transport/async" // NARMA_TRANSPORT=async

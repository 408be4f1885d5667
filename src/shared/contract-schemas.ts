// Generated from the HTTP contract (contract.ts, contract-service.ts) by
// scripts/contract-schemas.ts: do not edit; run `npx tsx scripts/contract-schemas.ts` after changing it.
// A JSON copy of every schema TypeBox builds, typed as the TypeBox schema it is: the
// service reads these, and so loads no TypeBox at run time (docs/performance.md, Start-up).
// A schema another one holds is named there, not written again.
import type * as contract from './contract.js';
import type * as service from './contract-service.js';

export const Status = {
  "type": "object",
  "required": [
    "status"
  ],
  "properties": {
    "status": {
      "type": "string"
    }
  }
} as unknown as typeof service.Status;

export const ResetAnswer = {
  "type": "object",
  "required": [
    "reset",
    "event"
  ],
  "properties": {
    "reset": {
      "type": "boolean",
      "enum": [
        true
      ],
      "description": "always true: what the feature counted is forgotten"
    },
    "event": {
      "type": "string"
    }
  }
} as unknown as typeof contract.ResetAnswer;

export const Released = {
  "type": "object",
  "required": [
    "released"
  ],
  "properties": {
    "released": {
      "type": "boolean",
      "description": "The slot was held and is free now; false when it was free already (released before, or freed by its timeout)"
    }
  }
} as unknown as typeof contract.Released;

export const Refunded = {
  "type": "object",
  "required": [
    "refunded",
    "event"
  ],
  "properties": {
    "refunded": {
      "type": "boolean",
      "description": "false when that second has left every window, or the feature was reset since: nothing was counted there any more"
    },
    "event": {
      "type": "string"
    }
  }
} as unknown as typeof contract.Refunded;

export const ErrorBody = {
  "type": "object",
  "required": [
    "error"
  ],
  "properties": {
    "error": {
      "type": "object",
      "required": [
        "code",
        "message"
      ],
      "properties": {
        "code": {
          "type": "string",
          "description": "What went wrong, for programs: the README lists every code"
        },
        "message": {
          "type": "string",
          "description": "What went wrong, for people"
        }
      }
    }
  }
} as unknown as typeof contract.ErrorBody;

export const LeaseReturned = {
  "type": "object",
  "required": [
    "returned",
    "spent"
  ],
  "properties": {
    "returned": {
      "type": "integer",
      "description": "Units taken back from the lease’s second (others may use them now); 0 when a reset since the lease forgot its units already"
    },
    "spent": {
      "type": "integer",
      "description": "Units counted again at this second, where the window keeps them longest"
    }
  }
} as unknown as typeof contract.LeaseReturned;

export const Settled = {
  "type": "object",
  "required": [
    "reserved",
    "cost",
    "counted"
  ],
  "properties": {
    "reserved": {
      "type": "integer",
      "description": "What the reservation counted"
    },
    "cost": {
      "type": "integer",
      "description": "What is counted instead, at the settle’s second"
    },
    "counted": {
      "type": "integer",
      "description": "What the settle changed the counts by: cost − reserved (negative: a refund)"
    }
  }
} as unknown as typeof contract.Settled;

export const BatchItemError = {
  "type": "object",
  "required": [
    "error",
    "status"
  ],
  "properties": {
    "error": {
      "type": "object",
      "required": [
        "code",
        "message"
      ],
      "properties": {
        "code": {
          "type": "string",
          "description": "What went wrong, for programs: the README lists every code"
        },
        "message": {
          "type": "string",
          "description": "What went wrong, for people"
        }
      }
    },
    "status": {
      "type": "integer",
      "description": "the status /check would have answered: 400 for its input, 503 when shed"
    }
  }
} as unknown as typeof contract.BatchItemError;

export const Slot = {
  "type": "object",
  "required": [
    "id",
    "expiresAt"
  ],
  "properties": {
    "id": {
      "type": "string",
      "description": "Names the slot in its release; only its holder knows it"
    },
    "expiresAt": {
      "type": "integer",
      "description": "When the slot frees itself if never released (the limit’s timeout), in milliseconds since the epoch on memgate’s clock"
    }
  },
  "description": "The slot an allowed check of a concurrency limit holds while its request is in flight: release it with POST /release when the request is done"
} as unknown as typeof contract.Slot;

export const LimitStatus = {
  "type": "object",
  "required": [
    "name",
    "limit",
    "window",
    "remaining",
    "resetSeconds"
  ],
  "properties": {
    "name": {
      "type": "string"
    },
    "limit": {
      "type": "integer",
      "description": "most cost admitted per window"
    },
    "window": {
      "type": "integer",
      "description": "seconds"
    },
    "remaining": {
      "type": "integer",
      "description": "cost still admissible now (after this check counted, if it did)"
    },
    "resetSeconds": {
      "type": "integer",
      "description": "seconds until some counted cost leaves the window (0 when nothing is counted)"
    }
  }
} as unknown as typeof contract.LimitStatus;

export const ResetBody = {
  "type": "object",
  "required": [
    "event",
    "feature"
  ],
  "properties": {
    "event": {
      "type": "string",
      "description": "An event of the policy file, e.g. login",
      "examples": [
        "login"
      ]
    },
    "feature": {
      "type": "string",
      "description": "Who is doing it: an IP, a user id, an e-mail; up to 1024 UTF-8 bytes. An IP address is one client however it is written (`::ffff:203.0.113.7` is `203.0.113.7`, IPv6 in lower case and compressed)",
      "examples": [
        "203.0.113.7"
      ]
    }
  },
  "additionalProperties": false,
  "examples": [
    {
      "event": "login",
      "feature": "203.0.113.7"
    }
  ]
} as unknown as typeof contract.ResetBody;

export const Lease = {
  "type": "object",
  "required": [
    "id",
    "units",
    "seconds",
    "expiresAt"
  ],
  "properties": {
    "id": {
      "type": "string",
      "description": "Names the lease in its return; only its holder knows it"
    },
    "units": {
      "type": "integer",
      "description": "Units counted for the holder: at most what was asked, what remained and maxUnits"
    },
    "seconds": {
      "type": "integer",
      "description": "The lease’s life"
    },
    "expiresAt": {
      "type": "integer",
      "description": "When its life ends, in milliseconds since the epoch on memgate’s clock"
    }
  },
  "description": "The lease, when allowed: spend its units within its life, then return what is left"
} as unknown as typeof contract.Lease;

export const Reservation = {
  "type": "object",
  "required": [
    "id",
    "units",
    "seconds",
    "expiresAt"
  ],
  "properties": {
    "id": {
      "type": "string",
      "description": "Names the reservation in its settle; only its holder knows it"
    },
    "units": {
      "type": "integer",
      "description": "The cost counted: what was reserved"
    },
    "seconds": {
      "type": "integer",
      "description": "The reservation’s life: settle it by then"
    },
    "expiresAt": {
      "type": "integer",
      "description": "When its life ends, in milliseconds since the epoch on memgate’s clock"
    }
  },
  "description": "The reservation, when `reserve` was asked and allowed: settle it with POST /settle within its life"
} as unknown as typeof contract.Reservation;

export const UsageEvents = {
  "type": "object",
  "required": [
    "events",
    "retention"
  ],
  "properties": {
    "events": {
      "type": "array",
      "items": {
        "type": "object",
        "required": [
          "event",
          "from",
          "until"
        ],
        "properties": {
          "event": {
            "type": "string"
          },
          "from": {
            "type": "integer",
            "description": "its oldest data still kept, in epoch seconds"
          },
          "until": {
            "type": "integer",
            "description": "the end of its newest data"
          }
        }
      }
    },
    "retention": {
      "type": "array",
      "items": {
        "type": "object",
        "required": [
          "resolution",
          "keepSeconds"
        ],
        "properties": {
          "resolution": {
            "type": "integer"
          },
          "keepSeconds": {
            "type": "integer"
          }
        }
      },
      "description": "the resolutions kept, finest first (MEMGATE_USAGE_RETENTION)"
    }
  }
} as unknown as typeof service.UsageEvents;

export const ReleaseBody = {
  "type": "object",
  "required": [
    "event",
    "feature",
    "id"
  ],
  "properties": {
    "event": {
      "type": "string",
      "description": "An event of the policy file, e.g. login",
      "examples": [
        "login"
      ]
    },
    "feature": {
      "type": "string",
      "description": "Who is doing it: an IP, a user id, an e-mail; up to 1024 UTF-8 bytes. An IP address is one client however it is written (`::ffff:203.0.113.7` is `203.0.113.7`, IPv6 in lower case and compressed)",
      "examples": [
        "203.0.113.7"
      ]
    },
    "id": {
      "type": "string",
      "description": "The slot’s id, from the /check that took it",
      "maxLength": 1024
    }
  },
  "additionalProperties": false,
  "examples": [
    {
      "event": "export",
      "feature": "user-42",
      "id": "1.1vdd71vim1"
    }
  ]
} as unknown as typeof contract.ReleaseBody;

export const LeaseReturnBody = {
  "type": "object",
  "required": [
    "event",
    "feature",
    "id",
    "unused"
  ],
  "properties": {
    "event": {
      "type": "string",
      "description": "An event of the policy file, e.g. login",
      "examples": [
        "login"
      ]
    },
    "feature": {
      "type": "string",
      "description": "Who is doing it: an IP, a user id, an e-mail; up to 1024 UTF-8 bytes. An IP address is one client however it is written (`::ffff:203.0.113.7` is `203.0.113.7`, IPv6 in lower case and compressed)",
      "examples": [
        "203.0.113.7"
      ]
    },
    "id": {
      "type": "string",
      "description": "The id /lease gave",
      "maxLength": 64
    },
    "unused": {
      "type": "integer",
      "minimum": 0,
      "description": "Units the client did not spend"
    }
  },
  "additionalProperties": false,
  "examples": [
    {
      "event": "url_shorten",
      "feature": "user-42",
      "id": "1795427730.q8Yc3hJd0mWn2LxTf5RkAw",
      "unused": 4
    }
  ]
} as unknown as typeof contract.LeaseReturnBody;

export const UsageTopQuery = {
  "type": "object",
  "required": [
    "event"
  ],
  "properties": {
    "event": {
      "type": "string",
      "description": "An event of the policy file, or one with usage recorded (GET /usage/events)",
      "examples": [
        "login"
      ]
    },
    "from": {
      "type": "string",
      "description": "Epoch seconds, ISO 8601 (`2026-11-23T10:00:00Z`), or relative to now (`-1h`, `-30d`, `-2y`, `now`; units s, min or m, h, d, w, y). Default an hour before `until`",
      "examples": [
        "-1h"
      ]
    },
    "until": {
      "type": "string",
      "description": "Epoch seconds, ISO 8601 (`2026-11-23T10:00:00Z`), or relative to now (`-1h`, `-30d`, `-2y`, `now`; units s, min or m, h, d, w, y). Default `now`",
      "examples": [
        "now"
      ]
    },
    "limit": {
      "type": "string",
      "description": "Clients listed per outcome, up to 1000. Default 20",
      "examples": [
        "10"
      ]
    }
  },
  "additionalProperties": false
} as unknown as typeof service.UsageTopQuery;

export const PeekQuery = {
  "type": "object",
  "required": [
    "event",
    "feature"
  ],
  "properties": {
    "event": {
      "type": "string",
      "description": "An event of the policy file, e.g. login",
      "examples": [
        "login"
      ]
    },
    "feature": {
      "type": "string",
      "description": "Who is doing it: an IP, a user id, an e-mail; up to 1024 UTF-8 bytes. An IP address is one client however it is written (`::ffff:203.0.113.7` is `203.0.113.7`, IPv6 in lower case and compressed)",
      "examples": [
        "203.0.113.7"
      ]
    },
    "cost": {
      "type": "string",
      "pattern": "^[0-9]{1,16}$",
      "description": "A positive integer, 1 by default"
    },
    "tier": {
      "type": "string",
      "description": "The client's tier (one of the event's tiers: free, pro, ...), as a caller memgate trusts knows it; an override naming the client wins over it. Unknown: 400 unknown_tier",
      "examples": [
        "pro"
      ]
    }
  },
  "additionalProperties": false
} as unknown as typeof contract.PeekQuery;

export const CheckRequest = {
  "type": "object",
  "required": [
    "event",
    "feature"
  ],
  "properties": {
    "event": {
      "type": "string",
      "description": "An event of the policy file, e.g. login",
      "examples": [
        "login"
      ]
    },
    "feature": {
      "type": "string",
      "description": "Who is doing it: an IP, a user id, an e-mail; up to 1024 UTF-8 bytes. An IP address is one client however it is written (`::ffff:203.0.113.7` is `203.0.113.7`, IPv6 in lower case and compressed)",
      "examples": [
        "203.0.113.7"
      ]
    },
    "cost": {
      "type": "integer",
      "description": "A positive integer, 1 by default"
    },
    "tier": {
      "type": "string",
      "description": "The client's tier (one of the event's tiers: free, pro, ...), as a caller memgate trusts knows it; an override naming the client wins over it. Unknown: 400 unknown_tier",
      "examples": [
        "pro"
      ]
    }
  },
  "additionalProperties": false,
  "examples": [
    {
      "event": "login",
      "feature": "203.0.113.7"
    }
  ]
} as unknown as typeof contract.CheckRequest;

export const UsageTop = {
  "type": "object",
  "required": [
    "event",
    "from",
    "until",
    "allowed",
    "denied"
  ],
  "properties": {
    "event": {
      "type": "string"
    },
    "from": {
      "type": "integer",
      "description": "the start of the range as counted: `from` rounded down to the minute, or to the hour past a day (clients are kept per minute and hour)"
    },
    "until": {
      "type": "integer"
    },
    "allowed": {
      "type": "array",
      "items": {
        "type": "object",
        "required": [
          "feature",
          "count"
        ],
        "properties": {
          "feature": {
            "type": "string"
          },
          "count": {
            "type": "integer"
          }
        }
      },
      "description": "most first; a count is never more than the client got (exact unless a minute had more clients than memgate follows)"
    },
    "denied": {
      "type": "array",
      "items": {
        "type": "object",
        "required": [
          "feature",
          "count"
        ],
        "properties": {
          "feature": {
            "type": "string"
          },
          "count": {
            "type": "integer"
          }
        }
      },
      "description": "most first; a count is never more than the client got (exact unless a minute had more clients than memgate follows)"
    }
  }
} as unknown as typeof service.UsageTop;

export const LeaseBody = {
  "type": "object",
  "required": [
    "event",
    "feature",
    "units"
  ],
  "properties": {
    "event": {
      "type": "string",
      "description": "An event of the policy file, e.g. login",
      "examples": [
        "login"
      ]
    },
    "feature": {
      "type": "string",
      "description": "Who is doing it: an IP, a user id, an e-mail; up to 1024 UTF-8 bytes. An IP address is one client however it is written (`::ffff:203.0.113.7` is `203.0.113.7`, IPv6 in lower case and compressed)",
      "examples": [
        "203.0.113.7"
      ]
    },
    "tier": {
      "type": "string",
      "description": "The client's tier (one of the event's tiers: free, pro, ...), as a caller memgate trusts knows it; an override naming the client wins over it. Unknown: 400 unknown_tier",
      "examples": [
        "pro"
      ]
    },
    "units": {
      "type": "integer",
      "minimum": 1,
      "description": "How many units the client would like; memgate grants at most what remains and the policy’s maxUnits"
    }
  },
  "additionalProperties": false,
  "examples": [
    {
      "event": "url_shorten",
      "feature": "user-42",
      "units": 10
    }
  ]
} as unknown as typeof contract.LeaseBody;

export const RefundBody = {
  "type": "object",
  "required": [
    "event",
    "feature",
    "at"
  ],
  "properties": {
    "event": {
      "type": "string",
      "description": "An event of the policy file, e.g. login",
      "examples": [
        "login"
      ]
    },
    "feature": {
      "type": "string",
      "description": "Who is doing it: an IP, a user id, an e-mail; up to 1024 UTF-8 bytes. An IP address is one client however it is written (`::ffff:203.0.113.7` is `203.0.113.7`, IPv6 in lower case and compressed)",
      "examples": [
        "203.0.113.7"
      ]
    },
    "cost": {
      "type": "integer",
      "description": "The cost the check counted, 1 by default"
    },
    "tier": {
      "type": "string",
      "description": "The client's tier (one of the event's tiers: free, pro, ...), as a caller memgate trusts knows it; an override naming the client wins over it. Unknown: 400 unknown_tier",
      "examples": [
        "pro"
      ]
    },
    "at": {
      "type": "integer",
      "minimum": 0,
      "description": "When the check was counted, in milliseconds since the epoch"
    }
  },
  "additionalProperties": false,
  "examples": [
    {
      "event": "login",
      "feature": "203.0.113.7",
      "at": 1795427730250
    }
  ]
} as unknown as typeof contract.RefundBody;

export const SettleBody = {
  "type": "object",
  "required": [
    "event",
    "feature",
    "id",
    "cost"
  ],
  "properties": {
    "event": {
      "type": "string",
      "description": "An event of the policy file, e.g. login",
      "examples": [
        "login"
      ]
    },
    "feature": {
      "type": "string",
      "description": "Who is doing it: an IP, a user id, an e-mail; up to 1024 UTF-8 bytes. An IP address is one client however it is written (`::ffff:203.0.113.7` is `203.0.113.7`, IPv6 in lower case and compressed)",
      "examples": [
        "203.0.113.7"
      ]
    },
    "tier": {
      "type": "string",
      "description": "Checked as a tier of the event (unknown: 400 unknown_tier), and otherwise ignored: a reservation settles under the plan it was reserved under (its tier or override then)",
      "examples": [
        "pro"
      ]
    },
    "id": {
      "type": "string",
      "description": "The reservation’s id, from the /check that made it"
    },
    "cost": {
      "type": "integer",
      "description": "What the request actually cost: 0 and up, more or less than reserved"
    }
  },
  "additionalProperties": false,
  "examples": [
    {
      "event": "url_shorten",
      "feature": "user-42",
      "id": "1795427730.q8Yc3hJd0mWn2LxTf5RkAw",
      "cost": 17
    }
  ]
} as unknown as typeof contract.SettleBody;

export const CheckQuery = {
  "type": "object",
  "required": [
    "event",
    "feature"
  ],
  "properties": {
    "event": {
      "type": "string",
      "description": "An event of the policy file, e.g. login",
      "examples": [
        "login"
      ]
    },
    "feature": {
      "type": "string",
      "description": "Who is doing it: an IP, a user id, an e-mail; up to 1024 UTF-8 bytes. An IP address is one client however it is written (`::ffff:203.0.113.7` is `203.0.113.7`, IPv6 in lower case and compressed)",
      "examples": [
        "203.0.113.7"
      ]
    },
    "cost": {
      "type": "string",
      "pattern": "^[0-9]{1,16}$",
      "description": "A positive integer, 1 by default"
    },
    "tier": {
      "type": "string",
      "description": "The client's tier (one of the event's tiers: free, pro, ...), as a caller memgate trusts knows it; an override naming the client wins over it. Unknown: 400 unknown_tier",
      "examples": [
        "pro"
      ]
    },
    "reserve": {
      "type": "string",
      "pattern": "^[0-9]{1,16}$",
      "description": "Reserves this cost (instead of `cost`) for a request whose actual cost is known only later: counted now, with a `reservation` to settle with `POST /settle`. For events with a `reservations` section"
    }
  },
  "additionalProperties": false
} as unknown as typeof contract.CheckQuery;

export const CheckBody = {
  "type": "object",
  "required": [
    "event",
    "feature"
  ],
  "properties": {
    "event": {
      "type": "string",
      "description": "An event of the policy file, e.g. login",
      "examples": [
        "login"
      ]
    },
    "feature": {
      "type": "string",
      "description": "Who is doing it: an IP, a user id, an e-mail; up to 1024 UTF-8 bytes. An IP address is one client however it is written (`::ffff:203.0.113.7` is `203.0.113.7`, IPv6 in lower case and compressed)",
      "examples": [
        "203.0.113.7"
      ]
    },
    "cost": {
      "type": "integer",
      "description": "A positive integer, 1 by default"
    },
    "tier": {
      "type": "string",
      "description": "The client's tier (one of the event's tiers: free, pro, ...), as a caller memgate trusts knows it; an override naming the client wins over it. Unknown: 400 unknown_tier",
      "examples": [
        "pro"
      ]
    },
    "reserve": {
      "type": "integer",
      "description": "Reserves this cost (instead of `cost`) for a request whose actual cost is known only later: counted now, with a `reservation` to settle with `POST /settle`. For events with a `reservations` section"
    }
  },
  "additionalProperties": false,
  "examples": [
    {
      "event": "login",
      "feature": "203.0.113.7"
    }
  ]
} as unknown as typeof contract.CheckBody;

export const ReloadCarried = {
  "type": "object",
  "required": [
    "event",
    "how",
    "since",
    "exactAt",
    "secondsUntilExact",
    "reasons"
  ],
  "properties": {
    "event": {
      "type": "string"
    },
    "how": {
      "type": "string",
      "enum": [
        "conservative",
        "not-carried"
      ],
      "description": "conservative: until exactAt each limit is judged on an upper bound of what the counters hold (buckets every instance counted, any overlapping its window counted whole); not-carried: an algorithm of another kind, whose counts are not read (clients start afresh)"
    },
    "since": {
      "type": "integer",
      "description": "the second of the reload (since the epoch), by the clock of the instance that answers"
    },
    "exactAt": {
      "type": "integer",
      "description": "from this second (since the epoch) on, the event is judged exactly on its own buckets"
    },
    "secondsUntilExact": {
      "type": "integer",
      "description": "how long until then, from the answer"
    },
    "reasons": {
      "type": "array",
      "items": {
        "type": "string"
      },
      "description": "why: sizes new to the reload, sizes kept for less time, counts older than the old policies kept"
    }
  },
  "description": "docs/operations.md, Changing policies: the bounds of a reload"
} as unknown as typeof contract.ReloadCarried;

export const CheckBatch = {
  "type": "array",
  "items": CheckBody,
  "minItems": 1,
  "maxItems": 100,
  "examples": [
    [
      {
        "event": "login",
        "feature": "203.0.113.7"
      },
      {
        "event": "url_shorten",
        "feature": "user-42",
        "cost": 3
      }
    ]
  ]
} as unknown as typeof contract.CheckBatch;

export const UsageQuery = {
  "type": "object",
  "required": [
    "event"
  ],
  "properties": {
    "event": {
      "type": "string",
      "description": "An event of the policy file, or one with usage recorded (GET /usage/events)",
      "examples": [
        "login"
      ]
    },
    "feature": {
      "type": "string",
      "description": "One client: its curve, from the minutes it was among the heaviest (MEMGATE_USAGE_TOP). Omitted, the whole event",
      "examples": [
        "203.0.113.7"
      ]
    },
    "from": {
      "type": "string",
      "description": "Epoch seconds, ISO 8601 (`2026-11-23T10:00:00Z`), or relative to now (`-1h`, `-30d`, `-2y`, `now`; units s, min or m, h, d, w, y). Default an hour before `until`",
      "examples": [
        "-1h"
      ]
    },
    "until": {
      "type": "string",
      "description": "Epoch seconds, ISO 8601 (`2026-11-23T10:00:00Z`), or relative to now (`-1h`, `-30d`, `-2y`, `now`; units s, min or m, h, d, w, y). Default `now`, which counts the current second",
      "examples": [
        "now"
      ]
    },
    "step": {
      "type": "string",
      "description": "Seconds per point, rounded up to a multiple of the resolution kept that far back (1 s for 6 hours, 1 min for 30 days, 1 h for 2 years by default). Default: a round step giving at most `maxDataPoints` points",
      "examples": [
        "60"
      ]
    },
    "maxDataPoints": {
      "type": "string",
      "description": "The most points wanted when no `step` is given, up to 10000. Default 60",
      "examples": [
        "300"
      ]
    }
  },
  "additionalProperties": false
} as unknown as typeof service.UsageQuery;

export const Reloaded = {
  "type": "object",
  "required": [
    "reloaded",
    "source",
    "events"
  ],
  "properties": {
    "reloaded": {
      "type": "boolean"
    },
    "source": {
      "type": "string"
    },
    "events": {
      "type": "array",
      "items": {
        "type": "string"
      }
    },
    "carried": {
      "type": "array",
      "items": ReloadCarried,
      "description": "present when this reload changed what some event counts in: each such event, how it is judged meanwhile and until when"
    }
  }
} as unknown as typeof contract.Reloaded;

export const UsagePoint = {
  "type": "object",
  "required": [
    "t",
    "allowed",
    "denied",
    "degraded",
    "shadow_denied",
    "settled",
    "settled_cost"
  ],
  "properties": {
    "t": {
      "type": "integer",
      "description": "the step's first second, in epoch seconds"
    },
    "allowed": {
      "type": "integer",
      "description": "decisions that admitted the request"
    },
    "denied": {
      "type": "integer",
      "description": "decisions that refused it"
    },
    "degraded": {
      "type": "integer",
      "description": "decisions made by the event's onStoreError rule, without counts, because the store did not answer"
    },
    "shadow_denied": {
      "type": "integer",
      "description": "of the allowed decisions, those a limit in `mode: shadow` would have denied (counted in `allowed` too); 0 on a client's curve, as it is counted per event only"
    },
    "settled": {
      "type": "integer",
      "description": "reservations settled in this step (`POST /settle`, and Envoy's at a stream's end), counted at the settle's second; 0 on a client's curve, as settles are counted per event only"
    },
    "settled_cost": {
      "type": "integer",
      "description": "the sum of those settles' actual `cost`, in the units the event's limits count (tokens, say), not decisions; 0 on a client's curve"
    },
    "tracked": {
      "type": "object",
      "required": [
        "allowed",
        "denied"
      ],
      "properties": {
        "allowed": {
          "type": "boolean"
        },
        "denied": {
          "type": "boolean"
        }
      },
      "description": "A client's curve only: for each outcome, whether its count is known. False where, in some minute (or hour, for older history) of this step, the client was not among the heaviest the history names while other clients went unnamed: its count there is unknown, so the point's count is a lower bound (0: unknown, not none)"
    }
  }
} as unknown as typeof service.UsagePoint;

export const Readiness = {
  "type": "object",
  "required": [
    "status",
    "store"
  ],
  "properties": {
    "status": {
      "type": "string",
      "description": "ready, unavailable, or draining (shutting down)"
    },
    "store": {
      "type": "string",
      "description": "memcached or embedded"
    },
    "policyVersion": {
      "type": "string",
      "description": "the version of the policies in use: a hash of the policy file and MEMGATE_ENVOY_CONFIG, the same on every instance that runs the same files"
    },
    "clockOffsetMs": {
      "type": "integer",
      "description": "the store's clock, which memgate counts by, minus this host's, in milliseconds (the servers' median; 0 for the embedded store)"
    },
    "servers": {
      "type": "array",
      "items": {
        "type": "object",
        "required": [
          "server",
          "up"
        ],
        "properties": {
          "server": {
            "type": "string"
          },
          "up": {
            "type": "boolean"
          },
          "error": {
            "type": "string"
          },
          "evictions": {
            "type": "integer",
            "description": "items evicted since the server started: raise its memory if this grows"
          },
          "clockOffsetMs": {
            "type": "integer",
            "description": "this server's clock minus this host's, in milliseconds, as last measured"
          },
          "state": {
            "type": "string",
            "enum": [
              "up",
              "down",
              "failed-over"
            ],
            "description": "where this server's clients are counted: `up` on it; `down` nowhere, their checks decided by each event's onStoreError; `failed-over` on the servers in failedOverTo (MEMCACHED_FAILOVER), until it has answered for MEMCACHED_FAILOVER_SETTLE_MS"
          },
          "failedOverTo": {
            "type": "array",
            "items": {
              "type": "string"
            },
            "description": "while failed over: the servers after it on the ring, which count its clients (from zero)"
          },
          "returnsInMs": {
            "type": "integer",
            "description": "failed over and answering again: how long until its clients move back, if it keeps answering"
          }
        }
      }
    },
    "error": {
      "type": "object",
      "required": [
        "code",
        "message"
      ],
      "properties": {
        "code": {
          "type": "string",
          "description": "What went wrong, for programs: the README lists every code"
        },
        "message": {
          "type": "string",
          "description": "What went wrong, for people"
        }
      }
    }
  }
} as unknown as typeof service.Readiness;

export const LeaseBatchBody = {
  "type": "object",
  "properties": {
    "take": {
      "type": "array",
      "items": LeaseBody,
      "maxItems": 100
    },
    "return": {
      "type": "array",
      "items": LeaseReturnBody,
      "maxItems": 100
    }
  },
  "additionalProperties": false,
  "examples": [
    {
      "take": [
        {
          "event": "url_shorten",
          "feature": "user-42",
          "units": 10
        }
      ],
      "return": [
        {
          "event": "url_shorten",
          "feature": "user-7",
          "id": "1795427730.q8Yc3hJd0mWn2LxTf5RkAw",
          "unused": 4
        }
      ]
    }
  ]
} as unknown as typeof contract.LeaseBatchBody;

export const UsageSeries = {
  "type": "object",
  "required": [
    "event",
    "feature",
    "from",
    "until",
    "step",
    "points"
  ],
  "properties": {
    "event": {
      "type": "string"
    },
    "feature": {
      "anyOf": [
        {
          "type": "string"
        },
        {
          "type": "null"
        }
      ],
      "description": "the client asked for, or null for the whole event"
    },
    "from": {
      "type": "integer",
      "description": "the range asked, in epoch seconds"
    },
    "until": {
      "type": "integer",
      "description": "its end, in epoch seconds (not included)"
    },
    "step": {
      "type": "integer",
      "description": "seconds per point"
    },
    "points": {
      "type": "array",
      "items": UsagePoint,
      "description": "One per step from the step holding `from` while before `until`, zero-filled, oldest first; they include what instances have not written yet"
    }
  }
} as unknown as typeof service.UsageSeries;

export const Decision = {
  "type": "object",
  "required": [
    "allowed",
    "limits"
  ],
  "properties": {
    "allowed": {
      "type": "boolean"
    },
    "limits": {
      "type": "array",
      "items": LimitStatus,
      "description": "Every enforced limit of the event, in policy-file order; empty when the decision is degraded or listed"
    },
    "retryAfter": {
      "type": "integer",
      "description": "seconds until this request would be allowed, if nothing else arrives; only on a deny"
    },
    "degraded": {
      "type": "boolean",
      "enum": [
        true
      ],
      "description": "true when the store could not answer and the event's onStoreError rule decided"
    },
    "shadowLimits": {
      "type": "array",
      "items": LimitStatus,
      "description": "The event's limits in mode: shadow, decided and counted as if enforced but never refusing (never in the RateLimit headers); absent when it has none"
    },
    "shadowDenied": {
      "type": "array",
      "items": {
        "type": "string"
      },
      "description": "The shadow limits that would have refused this request, had they been enforced"
    },
    "listed": {
      "type": "string",
      "enum": [
        "allow",
        "deny"
      ],
      "description": "The policy's allow or deny list holds the client: allowed without counting, or refused for good (no retryAfter); limits is empty"
    },
    "reservation": Reservation,
    "slot": Slot,
    "policyVersion": {
      "type": "string",
      "description": "The version of the policies the decision was made under, as /policies and /readyz name it: a reload between two requests shows here. Absent from a decision memgate/client makes itself"
    }
  }
} as unknown as typeof contract.Decision;

export const CheckBatchAnswer = {
  "type": "array",
  "items": {
    "anyOf": [
      Decision,
      BatchItemError
    ]
  }
} as unknown as typeof contract.CheckBatchAnswer;

export const LeaseDecision = {
  "type": "object",
  "required": [
    "allowed",
    "limits"
  ],
  "properties": {
    "allowed": {
      "type": "boolean"
    },
    "limits": {
      "type": "array",
      "items": LimitStatus,
      "description": "Every enforced limit of the event, in policy-file order; empty when the decision is degraded or listed"
    },
    "retryAfter": {
      "type": "integer",
      "description": "seconds until this request would be allowed, if nothing else arrives; only on a deny"
    },
    "degraded": {
      "type": "boolean",
      "enum": [
        true
      ],
      "description": "true when the store could not answer and the event's onStoreError rule decided"
    },
    "shadowLimits": {
      "type": "array",
      "items": LimitStatus,
      "description": "The event's limits in mode: shadow, decided and counted as if enforced but never refusing (never in the RateLimit headers); absent when it has none"
    },
    "shadowDenied": {
      "type": "array",
      "items": {
        "type": "string"
      },
      "description": "The shadow limits that would have refused this request, had they been enforced"
    },
    "listed": {
      "type": "string",
      "enum": [
        "allow",
        "deny"
      ],
      "description": "The policy's allow or deny list holds the client: allowed without counting, or refused for good (no retryAfter); limits is empty"
    },
    "reservation": Reservation,
    "slot": Slot,
    "policyVersion": {
      "type": "string",
      "description": "The version of the policies the decision was made under, as /policies and /readyz name it: a reload between two requests shows here. Absent from a decision memgate/client makes itself"
    },
    "lease": Lease
  }
} as unknown as typeof contract.LeaseDecision;

export const Policies = {
  "type": "object",
  "required": [
    "source",
    "events"
  ],
  "properties": {
    "version": {
      "type": "string",
      "description": "a hash of the policy file and MEMGATE_ENVOY_CONFIG: the same on every instance that runs the same files, new on each reload that changed them"
    },
    "source": {
      "type": "string",
      "description": "the policy file"
    },
    "events": {
      "type": "array",
      "items": {
        "type": "object",
        "required": [
          "event",
          "algorithm",
          "onStoreError",
          "incrementsPerCheck",
          "keysPerCheck",
          "itemsPerFeature",
          "limits"
        ],
        "properties": {
          "event": {
            "type": "string"
          },
          "algorithm": {
            "type": "string"
          },
          "edge": {
            "type": "string"
          },
          "onStoreError": {
            "type": "string"
          },
          "lease": {
            "type": "object",
            "required": [
              "maxUnits",
              "life"
            ],
            "properties": {
              "maxUnits": {
                "type": "integer",
                "description": "most units one lease may take"
              },
              "life": {
                "type": "integer",
                "description": "seconds a lease lives"
              }
            },
            "description": "present when clients may take leases of this event"
          },
          "reservations": {
            "type": "object",
            "required": [
              "life"
            ],
            "properties": {
              "life": {
                "type": "integer",
                "description": "seconds a reservation may wait for its settle"
              }
            },
            "description": "present when checks of this event may reserve a cost and settle it later"
          },
          "incrementsPerCheck": {
            "type": "integer"
          },
          "keysPerCheck": {
            "type": "object",
            "required": [
              "max"
            ],
            "properties": {
              "max": {
                "type": "integer"
              }
            }
          },
          "itemsPerFeature": {
            "type": "integer",
            "description": "Memcached items one active feature keeps alive"
          },
          "limits": {
            "type": "array",
            "items": {
              "type": "object",
              "required": [
                "name",
                "limit",
                "window",
                "granularity",
                "bucketSizes",
                "keysPerCheck",
                "itemsPerFeature"
              ],
              "properties": {
                "name": {
                  "type": "string"
                },
                "limit": {
                  "type": "integer"
                },
                "window": {
                  "type": "integer"
                },
                "granularity": {
                  "type": "integer"
                },
                "calendar": {
                  "type": "object",
                  "required": [
                    "unit",
                    "anchor",
                    "timeZone"
                  ],
                  "properties": {
                    "unit": {
                      "type": "string",
                      "enum": [
                        "day",
                        "week",
                        "month"
                      ]
                    },
                    "anchor": {
                      "type": "integer",
                      "description": "the period's first day: ISO weekday for a week, day of the month for a month"
                    },
                    "timeZone": {
                      "type": "string",
                      "description": "an IANA time zone, e.g. Europe/Berlin"
                    }
                  },
                  "description": "a calendar window: periods from local midnight to local midnight"
                },
                "rate": {
                  "type": "object",
                  "required": [
                    "count",
                    "periodSeconds"
                  ],
                  "properties": {
                    "count": {
                      "type": "integer"
                    },
                    "periodSeconds": {
                      "type": "integer"
                    }
                  },
                  "description": "a token bucket's refill rate: count tokens every periodSeconds; limit is its burst"
                },
                "shadow": {
                  "type": "boolean",
                  "enum": [
                    true
                  ],
                  "description": "mode: shadow: decided and counted, never refusing"
                },
                "inFlight": {
                  "type": "boolean",
                  "enum": [
                    true
                  ],
                  "description": "a concurrency limit: limit requests in flight at once, window is its timeout"
                },
                "bucketSizes": {
                  "type": "array",
                  "items": {
                    "type": "integer"
                  }
                },
                "keysPerCheck": {
                  "type": "object",
                  "required": [
                    "max"
                  ],
                  "properties": {
                    "max": {
                      "type": "integer"
                    },
                    "mean": {
                      "type": "number"
                    }
                  }
                },
                "itemsPerFeature": {
                  "type": "integer"
                }
              }
            }
          },
          "tiers": {
            "type": "object",
            "patternProperties": {
              "^.*$": {
                "type": "array",
                "items": {
                  "type": "object",
                  "required": [
                    "name",
                    "limit",
                    "window",
                    "granularity",
                    "bucketSizes",
                    "keysPerCheck",
                    "itemsPerFeature"
                  ],
                  "properties": {
                    "name": {
                      "type": "string"
                    },
                    "limit": {
                      "type": "integer"
                    },
                    "window": {
                      "type": "integer"
                    },
                    "granularity": {
                      "type": "integer"
                    },
                    "calendar": {
                      "type": "object",
                      "required": [
                        "unit",
                        "anchor",
                        "timeZone"
                      ],
                      "properties": {
                        "unit": {
                          "type": "string",
                          "enum": [
                            "day",
                            "week",
                            "month"
                          ]
                        },
                        "anchor": {
                          "type": "integer",
                          "description": "the period's first day: ISO weekday for a week, day of the month for a month"
                        },
                        "timeZone": {
                          "type": "string",
                          "description": "an IANA time zone, e.g. Europe/Berlin"
                        }
                      },
                      "description": "a calendar window: periods from local midnight to local midnight"
                    },
                    "rate": {
                      "type": "object",
                      "required": [
                        "count",
                        "periodSeconds"
                      ],
                      "properties": {
                        "count": {
                          "type": "integer"
                        },
                        "periodSeconds": {
                          "type": "integer"
                        }
                      },
                      "description": "a token bucket's refill rate: count tokens every periodSeconds; limit is its burst"
                    },
                    "shadow": {
                      "type": "boolean",
                      "enum": [
                        true
                      ],
                      "description": "mode: shadow: decided and counted, never refusing"
                    },
                    "inFlight": {
                      "type": "boolean",
                      "enum": [
                        true
                      ],
                      "description": "a concurrency limit: limit requests in flight at once, window is its timeout"
                    },
                    "bucketSizes": {
                      "type": "array",
                      "items": {
                        "type": "integer"
                      }
                    },
                    "keysPerCheck": {
                      "type": "object",
                      "required": [
                        "max"
                      ],
                      "properties": {
                        "max": {
                          "type": "integer"
                        },
                        "mean": {
                          "type": "number"
                        }
                      }
                    },
                    "itemsPerFeature": {
                      "type": "integer"
                    }
                  }
                }
              }
            },
            "description": "present when the event has tiers: each tier's limits"
          },
          "overrides": {
            "type": "object",
            "required": [
              "count",
              "lapsed"
            ],
            "properties": {
              "count": {
                "type": "integer"
              },
              "lapsed": {
                "type": "integer"
              }
            },
            "description": "present when the event has overrides: how many, and how many are past their until"
          },
          "reload": {
            "type": "object",
            "required": [
              "how",
              "since",
              "exactAt",
              "secondsUntilExact",
              "reasons"
            ],
            "properties": {
              "how": {
                "type": "string",
                "enum": [
                  "conservative",
                  "not-carried"
                ]
              },
              "since": {
                "type": "integer",
                "description": "the second of the reload (since the epoch)"
              },
              "exactAt": {
                "type": "integer",
                "description": "from this second on, judged exactly on its own buckets"
              },
              "secondsUntilExact": {
                "type": "integer"
              },
              "reasons": {
                "type": "array",
                "items": {
                  "type": "string"
                }
              }
            },
            "description": "present while the reload that loaded these policies is not yet exact for this event: how it is judged until then (see the answer of /admin/reload, carried)"
          },
          "allow": {
            "type": "integer",
            "description": "entries of the allow list, when it has one"
          },
          "deny": {
            "type": "integer",
            "description": "entries of the deny list, when it has one"
          }
        }
      }
    }
  }
} as unknown as typeof service.Policies;

export const LeaseBatchAnswer = {
  "type": "object",
  "required": [
    "returned",
    "taken"
  ],
  "properties": {
    "returned": {
      "type": "array",
      "items": {
        "anyOf": [
          LeaseReturned,
          BatchItemError
        ]
      },
      "description": "One answer per return, in order: as /lease/return’s 200 body, or its error and status"
    },
    "taken": {
      "type": "array",
      "items": {
        "anyOf": [
          LeaseDecision,
          BatchItemError
        ]
      },
      "description": "One answer per take, in order: the decision (with the lease when allowed) as /lease answers it, or its error and status"
    }
  }
} as unknown as typeof contract.LeaseBatchAnswer;

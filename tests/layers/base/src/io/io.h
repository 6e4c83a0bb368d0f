/* io's private header */

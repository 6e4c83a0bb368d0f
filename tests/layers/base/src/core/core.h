/* core's private header */

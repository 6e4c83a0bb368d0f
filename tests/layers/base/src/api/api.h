/* api's private header (the admin header would sit here) */

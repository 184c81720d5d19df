#!/bin/sh
echo waiting
sleep 5
